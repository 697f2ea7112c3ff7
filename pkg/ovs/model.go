package ovs

import (
	"context"
	"errors"
	"slices"

	"github.com/kuryr-k8s/kuryr/pkg/names"
	"github.com/ovn-org/libovsdb/client"
	"github.com/ovn-org/libovsdb/model"
)

// The Open_vSwitch database's tables kuryr uses.
const (
	dbName  = "Open_vSwitch"
	tRoot   = "Open_vSwitch"
	tBridge = "Bridge"
	tPort   = "Port"
	tIface  = "Interface"
)

// Models of the rows kuryr reads or writes: only the columns it uses.
type (
	ovsRoot struct {
		UUID    string `ovsdb:"_uuid"`
		NextCfg int    `ovsdb:"next_cfg"`
		CurCfg  int    `ovsdb:"cur_cfg"`
	}
	ovsBridge struct {
		UUID  string   `ovsdb:"_uuid"`
		Name  string   `ovsdb:"name"`
		Ports []string `ovsdb:"ports"`
	}
	ovsPort struct {
		UUID       string   `ovsdb:"_uuid"`
		Name       string   `ovsdb:"name"`
		Interfaces []string `ovsdb:"interfaces"`
	}
	// Type and MAC are written, never monitored: they read as zero.
	ovsIface struct {
		UUID        string            `ovsdb:"_uuid"`
		Name        string            `ovsdb:"name"`
		Type        string            `ovsdb:"type"`
		MAC         *string           `ovsdb:"mac"`
		ExternalIDs map[string]string `ovsdb:"external_ids"`
	}
)

func clientDBModel() (model.ClientDBModel, error) {
	return model.NewClientDBModel(dbName, map[string]model.Model{
		tRoot: &ovsRoot{}, tBridge: &ovsBridge{}, tPort: &ovsPort{}, tIface: &ovsIface{},
	})
}

// monitorOpts are the columns kuryr monitors into the cache.
func monitorOpts() []client.MonitorOption {
	var (
		r ovsRoot
		b ovsBridge
		p ovsPort
		i ovsIface
	)
	return []client.MonitorOption{
		client.WithTable(&r, &r.NextCfg, &r.CurCfg),
		client.WithTable(&b, &b.Name, &b.Ports),
		client.WithTable(&p, &p.Name, &p.Interfaces),
		client.WithTable(&i, &i.Name, &i.ExternalIDs),
	}
}

// get reads the row of m's index (_uuid or name) from the cache: false if
// it has none.
func get(ctx context.Context, c client.Client, m model.Model) (bool, error) {
	err := c.Get(ctx, m)
	if errors.Is(err, client.ErrNotFound) {
		return false, nil
	}
	return err == nil, err
}

// findBridge is the bridge named name.
func findBridge(ctx context.Context, c client.Client, name string) (*ovsBridge, bool, error) {
	b := &ovsBridge{Name: name}
	ok, err := get(ctx, c, b)
	return b, ok, err
}

// findPort is the port named name and the bridge that holds it (a port no
// bridge holds is gone: OVSDB collects it).
func findPort(ctx context.Context, c client.Client, name string) (*ovsPort, *ovsBridge, bool, error) {
	p := &ovsPort{Name: name}
	if ok, err := get(ctx, c, p); !ok {
		return nil, nil, false, err
	}
	var bs []*ovsBridge
	err := c.WhereCache(func(b *ovsBridge) bool { return slices.Contains(b.Ports, p.UUID) }).List(ctx, &bs)
	if err != nil || len(bs) == 0 {
		return nil, nil, false, err
	}
	return p, bs[0], true, nil
}

// findIface is the interface named name.
func findIface(ctx context.Context, c client.Client, name string) (*ovsIface, bool, error) {
	i := &ovsIface{Name: name}
	ok, err := get(ctx, c, i)
	return i, ok, err
}

// root is the Open_vSwitch row.
func root(ctx context.Context, c client.Client) (*ovsRoot, bool, error) {
	var rs []*ovsRoot
	if err := c.List(ctx, &rs); err != nil || len(rs) == 0 {
		return nil, false, err
	}
	return rs[0], true, nil
}

// portOfIface is what kuryr recorded on an interface it plugged.
func portOfIface(i *ovsIface) Port {
	m := i.ExternalIDs
	return Port{
		Name: i.Name, PortID: m["iface-id"], MAC: m["attached-mac"], PodUID: m["vm-uuid"],
		ContainerID: m[names.ExtContainerID], IfName: m[names.ExtIfName], PodName: m[names.ExtPod],
	}
}
