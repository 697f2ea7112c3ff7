package ovs

import (
	"context"
	"fmt"

	"github.com/kuryr-k8s/kuryr/pkg/names"
	"github.com/ovn-org/libovsdb/client"
	"github.com/ovn-org/libovsdb/model"
	"github.com/ovn-org/libovsdb/ovsdb"
)

// The transactions ovs-vsctl used to make for kuryr, and their running.

// builder makes a transaction's operations of the cache.
type builder func(context.Context, client.Client) ([]ovsdb.Operation, error)

// transact runs the operations build makes of the cache, within ovs-vsctl's
// 30 seconds. Unless noWait, it then waits for ovs-vswitchd to apply them
// (cur_cfg reaching the next_cfg the transaction set), as ovs-vsctl did. A
// transaction that changes nothing is not sent.
func (o *Client) transact(ctx context.Context, build builder) error {
	return o.transactWait(ctx, build, !o.noWait)
}

// transactWait is transact, waiting for ovs-vswitchd or not as wait says.
func (o *Client) transactWait(ctx context.Context, build builder, wait bool) error {
	ctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	s := o.session()
	if err := s.connected(ctx, connectWait); err != nil {
		return err
	}
	ops, err := build(ctx, s.cl)
	if err != nil || len(ops) == 0 {
		return err
	}
	if wait {
		next, err := nextCfgOps(ctx, s.cl)
		if err != nil {
			return err
		}
		ops = append(ops, next...)
	}
	res, err := s.transact(ctx, connectWait, ops...)
	if err != nil || !wait {
		return err
	}
	return waitApplied(ctx, s, res)
}

// waitApplied waits for ovs-vswitchd to reach the next_cfg of res.
func waitApplied(ctx context.Context, s *session, res []ovsdb.OperationResult) error {
	next, err := nextCfg(res)
	if err != nil {
		return err
	}
	err = s.waitFor(ctx, func(ctx context.Context, c client.Client) (bool, error) {
		r, ok, err := root(ctx, c)
		return ok && r.CurCfg >= next, err
	})
	if err != nil {
		return fmt.Errorf("wait for ovs-vswitchd to apply next_cfg %d: %w", next, err)
	}
	return nil
}

// PodExternalIDs are the external_ids of a pod's interface (a VM node
// shows its file records the same way).
func PodExternalIDs(p Port) map[string]string {
	return map[string]string{
		"iface-id": p.PortID, "attached-mac": p.MAC, "iface-status": "active", "vm-uuid": p.PodUID,
		names.ExtContainerID: p.ContainerID, names.ExtIfName: p.IfName, names.ExtPod: p.PodName,
	}
}

// internalExternalIDs are the external_ids EnsureInternalPort and
// EnsureSystemPort set.
func internalExternalIDs(portID, mac string) map[string]string {
	return map[string]string{"iface-id": portID, "attached-mac": mac, "iface-status": "active"}
}

// addPortOps is add-port bridge name: the interface iface (its name set
// here), a port holding it, the bridge holding the port, failing unless
// the bridge exists when it runs (ovs-vsctl's "no bridge named ..."). tag
// names the new rows uniquely within the transaction.
func addPortOps(c client.Client, bridge, name, tag string, iface *ovsIface) ([]ovsdb.Operation, error) {
	b := &ovsBridge{Name: bridge}
	zero := 0
	ops, err := c.Where(b).Wait(ovsdb.WaitConditionEqual, &zero, b, &b.Name)
	if err != nil {
		return nil, err
	}
	iface.UUID, iface.Name = "i"+tag, name
	create, err := c.Create(iface, &ovsPort{UUID: "p" + tag, Name: name, Interfaces: []string{iface.UUID}})
	if err != nil {
		return nil, err
	}
	mutate, err := c.Where(b).Mutate(b, model.Mutation{Field: &b.Ports, Mutator: ovsdb.MutateOperationInsert,
		Value: []string{"p" + tag}})
	if err != nil {
		return nil, err
	}
	return append(append(ops, create...), mutate...), nil
}

// delPortOps is --if-exists del-port name, as the cache knows the port:
// the bridge lets go of it and OVSDB collects the port and its interfaces.
// Were the cache behind, the insert of a port of that name would break the
// name index and the transaction would do nothing.
func delPortOps(ctx context.Context, c client.Client, name string) ([]ovsdb.Operation, error) {
	p, b, ok, err := findPort(ctx, c, name)
	if err != nil || !ok {
		return nil, err
	}
	m := &ovsBridge{UUID: b.UUID}
	return c.Where(m).Mutate(m, model.Mutation{Field: &m.Ports, Mutator: ovsdb.MutateOperationDelete,
		Value: []string{p.UUID}})
}

// setIfaceOps is set Interface name type=... mac=... external_ids:k=v...:
// type and mac replaced (mac cleared when nil), the given keys of
// external_ids replaced, others kept.
func setIfaceOps(c client.Client, name, typ string, mac *string, ext map[string]string) ([]ovsdb.Operation, error) {
	m := &ovsIface{Name: name, Type: typ, MAC: mac}
	ops, err := c.Where(m).Update(m, &m.Type, &m.MAC)
	if err != nil {
		return nil, err
	}
	keys := make([]string, 0, len(ext))
	for k := range ext {
		keys = append(keys, k)
	}
	mutate, err := c.Where(m).Mutate(m,
		model.Mutation{Field: &m.ExternalIDs, Mutator: ovsdb.MutateOperationDelete, Value: keys},
		model.Mutation{Field: &m.ExternalIDs, Mutator: ovsdb.MutateOperationInsert, Value: ext})
	if err != nil {
		return nil, err
	}
	return append(ops, mutate...), nil
}

// nextCfgOps asks ovs-vswitchd to apply the transaction: next_cfg += 1,
// read back so that the caller can wait for cur_cfg to reach it.
func nextCfgOps(ctx context.Context, c client.Client) ([]ovsdb.Operation, error) {
	r, ok, err := root(ctx, c)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("no Open_vSwitch row: no next_cfg to wait for")
	}
	m := &ovsRoot{UUID: r.UUID}
	ops, err := c.Where(m).Mutate(m, model.Mutation{Field: &m.NextCfg, Mutator: ovsdb.MutateOperationAdd, Value: 1})
	if err != nil {
		return nil, err
	}
	return append(ops, ovsdb.Operation{Op: ovsdb.OperationSelect, Table: tRoot, Where: ops[0].Where,
		Columns: []string{"next_cfg"}}), nil
}

// nextCfg reads what nextCfgOps selected, the last result of a transaction.
func nextCfg(res []ovsdb.OperationResult) (int, error) {
	for i := len(res) - 1; i >= 0; i-- {
		if len(res[i].Rows) == 1 {
			switch v := res[i].Rows[0]["next_cfg"].(type) {
			case float64:
				return int(v), nil
			case int:
				return v, nil
			}
		}
	}
	return 0, fmt.Errorf("no Open_vSwitch row: next_cfg not read back")
}
