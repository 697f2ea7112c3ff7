package cleanup

import (
	"context"
	"errors"
	"sync"

	"github.com/go-logr/logr"

	"github.com/kuryr-k8s/kuryr/pkg/names"
	"github.com/kuryr-k8s/kuryr/pkg/neutron"
)

// binder binds a port to a host (the sweep's rebinding seam).
type binder interface {
	BindPort(ctx context.Context, id, host string, revision int) error
}

// maxRebinds: a port Neutron unbinds again after this many rebinds is left
// as it is, and said so once: what unbinds it (another port holding its
// address, which makes it a virtual port) outlives a rebind.
const maxRebinds = 3

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
		// No vif_type: the binding is hidden (policy get_port:binding:*),
		// not known to be wrong.
		if !ok || !o.Nodes[node] || p.HostID == node || p.VIFType == "" || o.unsettled(&p) {
			continue
		}
		out = append(out, Rebinding{Port: p, Node: node})
	}
	return out
}

// rebind binds each port to its node again, at the revision listed (a port
// changed since is looked at by the next sweep), at most maxRebinds times
// per port while its pod lives (writes done: a failed one is tried again
// by the next sweep); one failure does not stop the others.
func (s *Sweeper) rebind(ctx context.Context, logger logr.Logger, rs []Rebinding) error {
	var errs []error
	for _, r := range rs {
		kv := []any{"port", r.Port.ID, "podUid", names.PodUIDOf(r.Port.Tags), "node", r.Node,
			"boundTo", r.Port.HostID, "vifType", r.Port.VIFType}
		if done := s.rebinds.get(r.Port.ID); done >= maxRebinds {
			if s.rebinds.once(r.Port.ID) {
				logger.Error(nil, "Neutron keeps unbinding a pod's port: no longer rebound (does another port hold its address?)",
					append(kv, "rebinds", done)...)
			}
			continue
		}
		logger.Info("binding a pod's port to its node again (Neutron unbound it)", kv...)
		err := s.Binder.BindPort(ctx, r.Port.ID, r.Node, r.Port.RevisionNumber)
		switch {
		case err == nil:
			s.rebinds.add(r.Port.ID)
		case !neutron.PreconditionFailed(err):
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// counts counts rebinds per port, and remembers which ports were said to
// be given up; safe for concurrent use.
type counts struct {
	mu   sync.Mutex
	n    map[string]int
	told map[string]bool
}

// keep forgets the ports not in live.
func (c *counts) keep(live map[string]string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k := range c.n {
		if _, ok := live[k]; !ok {
			delete(c.n, k)
			delete(c.told, k)
		}
	}
}

func (c *counts) get(key string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[key]
}

func (c *counts) add(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == nil {
		c.n = map[string]int{}
	}
	c.n[key]++
}

// once is true the first time it is asked about key.
func (c *counts) once(key string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.told == nil {
		c.told = map[string]bool{}
	}
	first := !c.told[key]
	c.told[key] = true
	return first
}
