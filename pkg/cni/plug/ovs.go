// Package plug wires a pod's interface into its Neutron port on the node:
// a veth pair whose host end is an OVS port of the integration bridge
// carrying the port's id (what ovn-controller or the OVS agent binds), and
// whose pod end has the port's MAC, addresses and routes.
package plug

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/kuryr-k8s/kuryr/pkg/batch"
	"github.com/kuryr-k8s/kuryr/pkg/cni/plug/ovsdb"
)

// opTimeout bounds each call as ovs-vsctl's --timeout=30 did; connectWait
// is how long a call waits for a session with ovsdb-server (ovs-vsctl
// failed at once on a refused connection).
const (
	opTimeout   = 30 * time.Second
	connectWait = 2 * time.Second
)

// OVS talks OVSDB (RFC 7047) to the node's ovsdb-server itself, through
// one long-lived session that monitors the tables it reads: no ovs-vsctl
// binary, no client connection per call.
type OVS struct {
	db     string
	noWait bool
	adds   *batch.Group[Port, struct{}]

	once   sync.Once
	client *ovsdb.Client
}

// NewOVS talks to the ovsdb-server at db, e.g.
// "unix:/run/openvswitch/db.sock". With noWait, AddPort returns once OVSDB
// has the port, without waiting for ovs-vswitchd to apply it: for callers
// whose next wait implies that anyway (ovn-installed is set only on an
// interface vswitchd has applied). Under a burst of pods each waiting
// add-port otherwise waits for a reconfiguration of the whole bridge.
// The session starts at the first call.
func NewOVS(db string, noWait bool) *OVS {
	o := &OVS{db: db, noWait: noWait}
	one := func(ctx context.Context, p Port) (struct{}, error) {
		_, err := o.addPorts(ctx, []Port{p})
		return struct{}{}, err
	}
	// A failed transaction did nothing: retry each port alone.
	o.adds = batch.New(1, 64, o.addPorts, one, func(error) bool { return true })
	return o
}

// Port is what kuryr records on the OVS interface of a pod: enough to find
// the attachment of a sandbox again, after a daemon restart too.
type Port struct {
	Bridge, Name                 string // bridge; host interface (tap...)
	PortID, MAC, PodUID          string // the Neutron port; Nova-style vm-uuid
	ContainerID, IfName, PodName string // the CNI attachment; namespace/name
}

// Keys of Interface external_ids kuryr owns, besides the standard ones.
const (
	extContainer = "kuryr-container-id"
	extIfName    = "kuryr-ifname"
	extPod       = "kuryr-pod"
)

func (o *OVS) ovsdb() *ovsdb.Client {
	o.once.Do(func() { o.client = ovsdb.New(o.db, "Open_vSwitch", monitored) })
	return o.client
}

// Close ends the session with ovsdb-server, if any.
func (o *OVS) Close() {
	o.once.Do(func() {})
	if o.client != nil {
		o.client.Close()
	}
}

// AddPort (re)creates the OVS port of p in one transaction. The ports
// asked for while a transaction is running go together in the next one: a
// burst of pods on a node otherwise costs ovsdb-server (single-threaded)
// one transaction per pod.
func (o *OVS) AddPort(ctx context.Context, p Port) error {
	_, err := o.adds.Do(ctx, p)
	return err
}

func (o *OVS) addPorts(ctx context.Context, ps []Port) ([]struct{}, error) {
	names := make([]string, len(ps))
	build := func(t ovsdb.Tables) ([]ovsdb.Op, error) {
		var ops []ovsdb.Op
		for i, p := range ps {
			names[i] = p.Name
			if _, ok := findBridge(t, p.Bridge); !ok {
				return nil, fmt.Errorf("no bridge named %s", p.Bridge)
			}
			ops = append(ops, delPortOps(t, p.Name)...)
			ops = append(ops, addPortOps(p.Bridge, p.Name, fmt.Sprint(i),
				map[string]any{"external_ids": ovsdb.Map(podExternalIDs(p))})...)
		}
		return ops, nil
	}
	if err := o.transact(ctx, build); err != nil {
		return nil, fmt.Errorf("add OVS ports %s: %w", strings.Join(names, ","), err)
	}
	return make([]struct{}, len(ps)), nil
}

// EnsureInternalPort makes name an internal interface of bridge bound to
// the Neutron port portID with the port's MAC (what ovn-controller binds),
// in one transaction; what exists is updated in place.
func (o *OVS) EnsureInternalPort(ctx context.Context, bridge, name, portID, mac string) error {
	cols := map[string]any{"type": "internal", "mac": mac}
	ext := internalExternalIDs(portID, mac)
	build := func(t ovsdb.Tables) ([]ovsdb.Op, error) {
		if _, b, ok := findPort(t, name); ok {
			if b.Name != bridge {
				return nil, fmt.Errorf("port %s already exists on bridge %s", name, b.Name)
			}
			if _, ok := findIface(t, name); !ok {
				return nil, fmt.Errorf("no row %s in table Interface", name)
			}
			return setIfaceOps(name, cols, ext), nil
		}
		if _, ok := findBridge(t, bridge); !ok {
			return nil, fmt.Errorf("no bridge named %s", bridge)
		}
		cols["external_ids"] = ovsdb.Map(ext)
		return addPortOps(bridge, name, "0", cols), nil
	}
	if err := o.transact(ctx, build); err != nil {
		return fmt.Errorf("ensure internal OVS port %s on %s: %w", name, bridge, err)
	}
	return nil
}

// DelPort removes an OVS port; absent is fine.
func (o *OVS) DelPort(ctx context.Context, name string) error {
	build := func(t ovsdb.Tables) ([]ovsdb.Op, error) { return delPortOps(t, name), nil }
	if err := o.transact(ctx, build); err != nil {
		return fmt.Errorf("delete OVS port %s: %w", name, err)
	}
	return nil
}

// Ports lists the OVS interfaces kuryr plugged (those with a non-empty
// kuryr-container-id), by name.
func (o *OVS) Ports(ctx context.Context) ([]Port, error) {
	c := o.ovsdb()
	if err := c.Connected(ctx, connectWait); err != nil {
		return nil, fmt.Errorf("list OVS ports: %w", err)
	}
	var ports []Port
	c.Cache().View(func(t ovsdb.Tables) {
		for _, r := range t[tIface] {
			if i := ifaceOf(r); i.ExternalIDs[extContainer] != "" {
				ports = append(ports, portOfIface(i))
			}
		}
	})
	sort.Slice(ports, func(a, b int) bool { return ports[a].Name < ports[b].Name })
	return ports, nil
}

// WaitInstalled blocks until ovn-controller has installed the flows of an
// interface (it sets external_ids:ovn-installed), watching OVSDB rather
// than polling. The interface need not exist yet. The wait lasts timeout,
// at least a second, within ctx.
func (o *OVS) WaitInstalled(ctx context.Context, name string, timeout time.Duration) error {
	secs := max(1, int(timeout.Seconds()))
	ctx, cancel := context.WithTimeout(ctx, time.Duration(secs)*time.Second)
	defer cancel()
	c := o.ovsdb()
	err := c.Connected(ctx, connectWait)
	if err == nil {
		err = c.Cache().WaitFor(ctx, func(t ovsdb.Tables) bool {
			i, ok := findIface(t, name)
			return ok && i.ExternalIDs["ovn-installed"] == "true"
		})
	}
	if err != nil {
		return fmt.Errorf("wait for ovn-installed on %s (%ds): %w", name, secs, err)
	}
	return nil
}
