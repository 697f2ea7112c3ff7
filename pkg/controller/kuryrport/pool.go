package kuryrport

import (
	"context"
	"sync"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/kuryr-k8s/kuryr/pkg/neutron"
)

// PoolTag marks a pooled port with the node it is bound to. A pooled port
// carries no pod tag: the KuryrPort that holds it records the ownership, so
// a port taken just before a crash, whose KuryrPort status was never
// written, simply returns to the pool at restart.
func PoolTag(node string) string { return "kuryr-pool=" + node }

// PoolSettings are the [vif_pool] options.
type PoolSettings struct {
	Min, Max, Batch int
}

// poolAPI is the Neutron seam of the pool.
type poolAPI interface {
	CreatePorts(ctx context.Context, specs []neutron.PortSpec) ([]neutron.Port, error)
	ListPorts(ctx context.Context, tags []string, status string) ([]neutron.Port, error)
	DeletePort(ctx context.Context, id string) error
}

// Pool keeps ready Neutron ports per node (on one subnet, with the pod
// security groups): the original kuryr's main start-up optimisation. A pod
// takes a port without any Neutron request; the port's creation happened
// earlier, in bulk, off the pod's critical path.
type Pool struct {
	mu       sync.Mutex
	free     map[string][]neutron.Port // node -> ports
	nodes    map[string]bool           // nodes to keep filled
	kick     chan struct{}
	target   Target
	Neutron  poolAPI
	Settings PoolSettings
	Spec     Settings
}

// NewPool returns an empty pool; it serves nothing until SetTarget.
func NewPool(n poolAPI, s PoolSettings, spec Settings) *Pool {
	return &Pool{free: map[string][]neutron.Port{}, nodes: map[string]bool{}, kick: make(chan struct{}, 1),
		Neutron: n, Settings: s, Spec: spec}
}

// SetTarget sets the network and subnet pooled ports are created on.
func (p *Pool) SetTarget(t Target) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.target = t
}

// Serves reports whether ports for t can come from the pool.
func (p *Pool) Serves(t Target) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.target.SubnetID != "" && p.target == t
}

// Load adopts the pooled ports Neutron has, except those in use (inUse: the
// port ids KuryrPort statuses name).
func (p *Pool) Load(ctx context.Context, inUse map[string]bool) error {
	ports, err := p.Neutron.ListPorts(ctx, []string{neutron.ClusterTag(p.Spec.Cluster)}, "")
	if err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, port := range ports {
		node := neutron.TagValue(port.Tags, "kuryr-pool=")
		if node != "" && !inUse[port.ID] {
			p.free[node] = append(p.free[node], port)
			p.nodes[node] = true
			p.gauge(node)
		}
	}
	return nil
}

// Take hands out a ready port bound to node, if one is free, and asks for a
// refill.
func (p *Pool) Take(node string) (neutron.Port, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.nodes[node] = true
	p.signal()
	ports := p.free[node]
	if len(ports) == 0 {
		return neutron.Port{}, false
	}
	port := ports[len(ports)-1]
	p.free[node] = ports[:len(ports)-1]
	p.gauge(node)
	return port, true
}

// Put returns a released port; false if the pool is full (delete it).
func (p *Pool) Put(node string, port neutron.Port) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.Settings.Max > 0 && len(p.free[node]) >= p.Settings.Max {
		return false
	}
	p.free[node] = append(p.free[node], port)
	p.gauge(node)
	return true
}

// Fill declares a node to keep filled.
func (p *Pool) Fill(node string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.nodes[node] = true
	p.signal()
}

// Prune forgets the nodes that are gone, with their free ports (the sweep
// deletes those from Neutron).
func (p *Pool) Prune(live map[string]bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for node := range p.free {
		if !live[node] {
			delete(p.free, node)
			poolFree.DeleteLabelValues(node)
		}
	}
	for node := range p.nodes {
		if !live[node] {
			delete(p.nodes, node)
		}
	}
}

// gauge publishes a node's free count; callers hold p.mu.
func (p *Pool) gauge(node string) { poolFree.WithLabelValues(node).Set(float64(len(p.free[node]))) }

func (p *Pool) signal() {
	select {
	case p.kick <- struct{}{}:
	default:
	}
}

// Start refills every node below Min with bulk creations of Batch ports,
// whenever a port is taken and at least every 20 s (a manager Runnable).
func (p *Pool) Start(ctx context.Context) error {
	t := time.NewTicker(20 * time.Second)
	defer t.Stop()
	for {
		for node, want := range p.deficits() {
			if err := p.refill(ctx, node, want); err != nil {
				log.FromContext(ctx).Error(err, "refilling the port pool", "node", node)
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-p.kick:
		case <-t.C:
		}
	}
}

func (p *Pool) deficits() map[string]int {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := map[string]int{}
	for node := range p.nodes {
		if n := len(p.free[node]); n < p.Settings.Min {
			out[node] = max(p.Settings.Batch, p.Settings.Min-n)
		}
	}
	return out
}

func (p *Pool) refill(ctx context.Context, node string, n int) error {
	p.mu.Lock()
	target := p.target
	p.mu.Unlock()
	specs := make([]neutron.PortSpec, n)
	for i := range specs {
		specs[i] = neutron.PortSpec{
			Name: "kuryr-pool-port", NetworkID: target.NetworkID, SubnetID: target.SubnetID,
			ProjectID: p.Spec.ProjectID, HostID: node, DeviceOwner: DeviceOwner,
			SecurityGroups: p.Spec.SecurityGroups,
			Tags:           append([]string{neutron.ClusterTag(p.Spec.Cluster), PoolTag(node)}, p.Spec.ExtraTags...),
		}
	}
	ports, err := p.Neutron.CreatePorts(ctx, specs)
	if err != nil {
		return err
	}
	p.mu.Lock()
	if !p.nodes[node] {
		p.mu.Unlock()
		return nil // pruned meanwhile: the sweep deletes them
	}
	p.free[node] = append(p.free[node], ports...)
	p.gauge(node)
	p.mu.Unlock()
	log.FromContext(ctx).Info("port pool refilled", "node", node, "created", len(ports))
	return nil
}
