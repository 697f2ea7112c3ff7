package kuryrport

import (
	"context"
	"errors"
	"fmt"

	"github.com/kuryr-k8s/kuryr/pkg/neutron"
)

// resolve asks Targets where the ports of every node to fill go now. A node
// whose target is not known (its network being created or removed) gets
// none: it is not refilled, and its free ports are deleted by the next
// trim. One that cannot be asked (an error) keeps what it had.
func (p *Pool) resolve(ctx context.Context) error {
	p.mu.Lock()
	nodes := make([]string, 0, len(p.nodes))
	for node := range p.nodes {
		nodes = append(nodes, node)
	}
	p.mu.Unlock()
	var errs []error
	for _, node := range nodes {
		t, ok, err := p.Targets(ctx, node)
		if err != nil {
			errs = append(errs, fmt.Errorf("the target of node %s: %w", node, err))
			continue
		}
		if !ok {
			t = Target{}
		}
		vm, poolable, err := p.kind(ctx, node)
		if err != nil {
			errs = append(errs, fmt.Errorf("the mode of node %s: %w", node, err))
			continue
		}
		if !poolable {
			t = Target{} // its pods' ports are never pooled: its free ones go
		}
		p.mu.Lock()
		if p.nodes[node] { // not pruned meanwhile
			p.targets[node], p.onVM[node] = t, vm
		}
		p.mu.Unlock()
	}
	return errors.Join(errs...)
}

// target is where node's ports go ("" SubnetID: nowhere yet or now).
// Callers hold p.mu.
func (p *Pool) target(node string) Target { return p.targets[node] }

// misplaced says whether a pooled port is not on its node's target, or not
// of its node's kind (the node relabelled), once that is known: it must not
// be handed out, nor go back to the free list. Callers hold p.mu.
func (p *Pool) misplaced(e *pooled) bool {
	t, known := p.targets[e.node]
	return known && (!on(e.port, t) || e.vm != p.onVM[e.node])
}

// on says whether a port is on t's network and has an address on its
// subnet. Pure.
func on(port neutron.Port, t Target) bool {
	if t.SubnetID == "" || port.NetworkID != t.NetworkID {
		return false
	}
	for _, ip := range port.FixedIPs {
		if ip.SubnetID == t.SubnetID {
			return true
		}
	}
	return false
}
