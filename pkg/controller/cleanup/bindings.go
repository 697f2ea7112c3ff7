package cleanup

import (
	"context"
	"errors"

	"github.com/go-logr/logr"

	"github.com/kuryr-k8s/kuryr/pkg/names"
	"github.com/kuryr-k8s/kuryr/pkg/neutron"
)

// binder binds a port to a host (the sweep's rebinding seam).
type binder interface {
	BindPort(ctx context.Context, id, host string) error
}

// Rebinding is a pod's port to bind to its node again.
type Rebinding struct {
	Port neutron.Port
	Node string
}

// UnboundPorts are the ports of live hypervisor pods that Neutron no longer
// binds to their pod's node: a port KuryrPort status names, on a node that
// exists, whose binding:host_id is another (ML2/OVN rewrites a port's
// binding as "unbound" on "" when it takes it for a virtual port: under
// load, a new port can get the address of a deleted one whose OVN port
// lingers). The pod keeps its dataplane, but Neutron reports the port DOWN
// and places it nowhere. Young ports and those Neutron may still be
// creating are left alone. Nested pods' ports (bound to no host by design)
// are not in o.PortNode. Pure.
func UnboundPorts(ports []neutron.Port, o Owners) []Rebinding {
	var out []Rebinding
	for _, p := range ports {
		node, ok := o.PortNode[p.ID]
		if !ok || !o.Nodes[node] || p.HostID == node || o.young(p.CreatedAt) ||
			o.BindTimeout > 0 && !neutron.CreateFinished(&p, o.BindTimeout, o.ListedAt) {
			continue
		}
		out = append(out, Rebinding{Port: p, Node: node})
	}
	return out
}

// rebind binds each port to its node again; one failure does not stop the
// others.
func (s *Sweeper) rebind(ctx context.Context, logger logr.Logger, rs []Rebinding) error {
	var errs []error
	for _, r := range rs {
		logger.Info("binding a pod's port to its node again (Neutron unbound it)", "port", r.Port.ID,
			"podUid", names.PodUIDOf(r.Port.Tags), "node", r.Node, "boundTo", r.Port.HostID, "vifType", r.Port.VIFType)
		errs = append(errs, s.Binder.BindPort(ctx, r.Port.ID, r.Node))
	}
	return errors.Join(errs...)
}
