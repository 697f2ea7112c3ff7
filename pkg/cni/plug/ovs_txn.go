package plug

import (
	"context"
	"fmt"

	"github.com/kuryr-k8s/kuryr/pkg/cni/plug/ovsdb"
)

// The transactions ovs-vsctl used to make for kuryr, and their running.

// transact runs the operations build makes of the cache, within ovs-vsctl's
// 30 seconds. Unless noWait, it then waits for ovs-vswitchd to apply them
// (cur_cfg reaching the next_cfg the transaction set), as ovs-vsctl did. A
// transaction that changes nothing is not sent.
func (o *OVS) transact(ctx context.Context, build func(ovsdb.Tables) ([]ovsdb.Op, error)) error {
	ctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	c := o.ovsdb()
	if err := c.Connected(ctx, connectWait); err != nil {
		return err
	}
	var ops []ovsdb.Op
	var err error
	c.Cache().View(func(t ovsdb.Tables) { ops, err = build(t) })
	if err != nil || len(ops) == 0 {
		return err
	}
	if !o.noWait {
		ops = append(ops, nextCfgOps()...)
	}
	res, err := c.Transact(ctx, connectWait, ops...)
	if err != nil || o.noWait {
		return err
	}
	return waitApplied(ctx, c, res)
}

// waitApplied waits for ovs-vswitchd to reach the next_cfg of res.
func waitApplied(ctx context.Context, c *ovsdb.Client, res []ovsdb.OpResult) error {
	next, err := nextCfg(res)
	if err != nil {
		return err
	}
	err = c.Cache().WaitFor(ctx, func(t ovsdb.Tables) bool {
		cur, ok := curCfg(t)
		return ok && cur >= next
	})
	if err != nil {
		return fmt.Errorf("wait for ovs-vswitchd to apply next_cfg %d: %w", next, err)
	}
	return nil
}

// podExternalIDs are the external_ids of a pod's interface.
func podExternalIDs(p Port) map[string]string {
	return map[string]string{
		"iface-id": p.PortID, "attached-mac": p.MAC, "iface-status": "active", "vm-uuid": p.PodUID,
		extContainer: p.ContainerID, extIfName: p.IfName, extPod: p.PodName,
	}
}

// internalExternalIDs are the external_ids EnsureInternalPort sets.
func internalExternalIDs(portID, mac string) map[string]string {
	return map[string]string{"iface-id": portID, "attached-mac": mac, "iface-status": "active"}
}

// bridgeExists fails the transaction unless bridge exists when it runs
// (ovs-vsctl's "no bridge named ...").
func bridgeExists(bridge string) ovsdb.Op {
	return ovsdb.Op{"op": "wait", "table": tBridge, "timeout": 0,
		"where":   ovsdb.Where(ovsdb.Cond("name", "==", bridge)),
		"columns": []string{"name"}, "until": "==", "rows": []any{map[string]any{"name": bridge}}}
}

// addPortOps is add-port bridge name: an interface with the columns iface,
// a port holding it, the bridge holding the port. tag names the new rows
// uniquely within the transaction.
func addPortOps(bridge, name, tag string, iface map[string]any) []ovsdb.Op {
	ifRow := map[string]any{"name": name}
	for k, v := range iface {
		ifRow[k] = v
	}
	return []ovsdb.Op{
		bridgeExists(bridge),
		{"op": "insert", "table": tIface, "uuid-name": "i" + tag, "row": ifRow},
		{"op": "insert", "table": tPort, "uuid-name": "p" + tag,
			"row": map[string]any{"name": name, "interfaces": ovsdb.NamedUUID("i" + tag)}},
		{"op": "mutate", "table": tBridge, "where": ovsdb.Where(ovsdb.Cond("name", "==", bridge)),
			"mutations": []any{[]any{"ports", "insert", ovsdb.Set(ovsdb.NamedUUID("p" + tag))}}},
	}
}

// delPortOps is --if-exists del-port name, as the cache knows the port:
// the bridge lets go of it and OVSDB collects the port and its interfaces.
// Were the cache behind, the insert of a port of that name would break the
// name index and the transaction would do nothing.
func delPortOps(t ovsdb.Tables, name string) []ovsdb.Op {
	p, b, ok := findPort(t, name)
	if !ok {
		return nil
	}
	return []ovsdb.Op{{"op": "mutate", "table": tBridge,
		"where":     ovsdb.Where(ovsdb.Cond("_uuid", "==", ovsdb.UUID(b.UUID))),
		"mutations": []any{[]any{"ports", "delete", ovsdb.Set(ovsdb.UUID(p.UUID))}}}}
}

// setIfaceOps is set Interface name col=value... external_ids:k=v...: the
// columns replaced, the given keys of external_ids replaced, others kept.
func setIfaceOps(name string, cols map[string]any, ext map[string]string) []ovsdb.Op {
	where := ovsdb.Where(ovsdb.Cond("name", "==", name))
	keys := make([]any, 0, len(ext))
	for k := range ext {
		keys = append(keys, k)
	}
	return []ovsdb.Op{
		{"op": "update", "table": tIface, "where": where, "row": cols},
		{"op": "mutate", "table": tIface, "where": where, "mutations": []any{
			[]any{"external_ids", "delete", ovsdb.Set(keys...)},
			[]any{"external_ids", "insert", ovsdb.Map(ext)},
		}},
	}
}

// nextCfgOps asks ovs-vswitchd to apply the transaction: next_cfg += 1,
// read back so that the caller can wait for cur_cfg to reach it.
func nextCfgOps() []ovsdb.Op {
	return []ovsdb.Op{
		{"op": "mutate", "table": tRoot, "where": ovsdb.Where(),
			"mutations": []any{[]any{"next_cfg", "+=", 1}}},
		{"op": "select", "table": tRoot, "where": ovsdb.Where(), "columns": []string{"next_cfg"}},
	}
}

// nextCfg reads what nextCfgOps selected, the last result of a transaction.
func nextCfg(res []ovsdb.OpResult) (int64, error) {
	for i := len(res) - 1; i >= 0; i-- {
		if len(res[i].Rows) == 1 {
			if raw, ok := res[i].Rows[0]["next_cfg"]; ok {
				return ovsdb.Int(raw), nil
			}
		}
	}
	return 0, fmt.Errorf("no Open_vSwitch row: next_cfg not read back")
}
