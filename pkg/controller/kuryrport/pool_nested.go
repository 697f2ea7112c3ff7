package kuryrport

import (
	"context"

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
// whether its pods take pooled ports at all (not nested-macvlan's).
func (p *Pool) kind(ctx context.Context, node string) (vm, poolable bool, err error) {
	if p.Nested == nil {
		return false, true, nil
	}
	mode, err := p.Nested.Mode(ctx, node)
	if err != nil {
		return false, false, err
	}
	return mode == nested.ModeVLAN, nested.Poolable(mode), nil
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
	}
}
