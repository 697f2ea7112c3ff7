package plug

import (
	"context"
	"fmt"

	"github.com/kuryr-k8s/kuryr/pkg/cni/plug/ovsdb"
)

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
