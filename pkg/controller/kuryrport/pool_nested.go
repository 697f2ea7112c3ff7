package kuryrport

import (
	"context"
	"errors"

	"sigs.k8s.io/controller-runtime/pkg/log"

	kuryrv1 "github.com/kuryr-k8s/kuryr/api/v1"
	"github.com/kuryr-k8s/kuryr/pkg/controller/nested"
	"github.com/kuryr-k8s/kuryr/pkg/neutron"
)

// poolPlacer is what the pool needs of package nested: each node's mode,
// and attaching a VM's pooled ports to its trunk.
type poolPlacer interface {
	Mode(ctx context.Context, node string) (string, error)
	Place(ctx context.Context, node string, ports []neutron.Port) (map[string]kuryrv1.NestedVIF, error)
}

// kind says whether node's pooled ports are a VM trunk's subports, and
// whether its pods take pooled ports at all (not nested-macvlan's, nor
// those of a node whose label names no mode: its free ports go).
func (p *Pool) kind(ctx context.Context, node string) (vm, poolable bool, err error) {
	if p.Nested == nil {
		return false, true, nil
	}
	mode, err := p.Nested.Mode(ctx, node)
	if errors.Is(err, nested.ErrInvalidMode) {
		return false, false, nil
	}
	if err != nil {
		return false, false, err
	}
	return mode == nested.ModeVLAN, nested.Poolable(mode), nil
}

// attachFree attaches, in one add_subports per node, the free ports of VM
// nodes that are not subports yet: those reloaded or adopted after a
// restart or an unanswered refill, or whose refill's attach failed.
func (p *Pool) attachFree(ctx context.Context) {
	if p.Nested == nil {
		return
	}
	for node, ports := range p.unattached() {
		p.attach(ctx, node, ports)
	}
}

// unattached are the free VM ports not attached yet, by node.
func (p *Pool) unattached() map[string][]neutron.Port {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := map[string][]neutron.Port{}
	for node, ids := range p.free {
		for _, id := range ids {
			if e := p.ports[id]; e.vm && !e.attached {
				out[node] = append(out[node], e.port)
			}
		}
	}
	return out
}

// attach makes a VM node's new pooled ports subports of its trunk, in one
// add_subports. A failure is only logged: the ports stay in the pool, and
// the pod that takes one attaches it (its placing reads the trunk first).
func (p *Pool) attach(ctx context.Context, node string, ports []neutron.Port) {
	if len(ports) == 0 {
		return
	}
	if _, err := p.Nested.Place(ctx, node, ports); err != nil {
		log.FromContext(ctx).Error(err, "attaching pooled ports to the VM's trunk (each is attached when a pod takes it)",
			"node", node, "ports", len(ports))
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, port := range ports {
		if e, ok := p.ports[port.ID]; ok {
			e.attached = true
		}
	}
}
