package kuryrport

import (
	"context"
	"slices"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/kuryr-k8s/kuryr/pkg/names"
	"github.com/kuryr-k8s/kuryr/pkg/neutron"
	"github.com/kuryr-k8s/kuryr/pkg/openstack"
)

// poolAPI is the Neutron seam of the pool.
type poolAPI interface {
	CreatePorts(ctx context.Context, specs []neutron.PortSpec) ([]neutron.Port, error)
	ListPorts(ctx context.Context, tags []string, status string) ([]neutron.Port, error)
	DeletePort(ctx context.Context, id string) error
}

// poolTick bounds how long a node waits below its minimum (after a failed
// or unclear refill) when no pod takes a port.
const poolTick = 5 * time.Second

// load adopts the pooled ports among ports (the cluster's, listed at
// start); holders maps the ports that KuryrPort statuses name to their pods.
func (p *Pool) load(ports []neutron.Port, holders map[string]string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.learn(p.finished(ports, holders), holders)
}

// finished are the ports Neutron is done creating and those a pod holds:
// one still being created is left to the sweep's adoption, later.
func (p *Pool) finished(ports []neutron.Port, holders map[string]string) []neutron.Port {
	now := time.Now()
	var out []neutron.Port
	for i := range ports {
		if _, held := holders[ports[i].ID]; held || neutron.CreateFinished(&ports[i], p.Spec.BindTimeout, now) {
			out = append(out, ports[i])
		}
	}
	return out
}

// Start refills every node below Min with bulk creations of Batch ports,
// whenever a port is taken and every poolTick (a manager Runnable). Each
// round first learns where every node's ports go and deletes the free
// ports that are not there (nor beyond Max).
func (p *Pool) Start(ctx context.Context) error {
	t := time.NewTicker(poolTick)
	defer t.Stop()
	for {
		if err := p.resolve(ctx); err != nil {
			log.FromContext(ctx).Error(err, "finding where the pooled ports go")
		}
		p.trim(ctx)
		p.attachFree(ctx)
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

// trim deletes the free ports beyond Max (adopted from refills that were
// thought lost).
func (p *Pool) trim(ctx context.Context) {
	for _, port := range p.excess() {
		if err := p.Neutron.DeletePort(ctx, port.ID); err != nil {
			if openstack.Unclear(err) {
				// The delete may have committed: the port stays retiring,
				// never handed out, and is deleted again (NotFound counts
				// as done) after retireGrace.
				p.retireAgain(port.ID)
			} else {
				p.unretire(port.ID)
			}
			log.FromContext(ctx).Error(err, "trimming the port pool", "port", port.ID)
			continue
		}
		p.Forget(port.ID)
	}
}

// excess takes off the free lists the ports beyond Max and those not on
// their node's target, to be deleted, with the ports left retiring for a
// while (their release's delete never came: a KuryrPort whose finalizer
// was removed by hand).
func (p *Pool) excess() []neutron.Port {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []neutron.Port
	for _, e := range p.ports {
		if e.state == stateRetiring && !e.retiredAt.IsZero() && time.Since(e.retiredAt) > retireGrace {
			out = append(out, e.port)
		}
	}
	for node, ids := range p.free {
		kept := ids[:0:0]
		for _, id := range ids {
			if e := p.ports[id]; p.misplaced(e) {
				e.state, e.retiredAt = stateRetiring, time.Now()
				out = append(out, e.port)
				continue
			}
			kept = append(kept, id)
		}
		ids = kept
		for p.Settings.Max > 0 && len(ids) > p.Settings.Max {
			e := p.ports[ids[0]]
			ids = ids[1:]
			e.state, e.retiredAt = stateRetiring, time.Now()
			out = append(out, e.port)
		}
		p.free[node] = ids
		p.gauge(node)
	}
	return out
}

// retireAgain has a retiring port deleted again after retireGrace.
func (p *Pool) retireAgain(id string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if e, ok := p.ports[id]; ok && e.state == stateRetiring {
		e.retiredAt = time.Now()
	}
}

// unretire puts back a port whose deletion Neutron refused.
func (p *Pool) unretire(id string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if e, ok := p.ports[id]; ok && e.state == stateRetiring {
		p.makeFree(e)
	}
}

func (p *Pool) deficits() map[string]int {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := map[string]int{}
	for node := range p.nodes {
		if p.target(node).SubnetID == "" {
			continue // not known yet, or the node's network is going
		}
		if n := len(p.free[node]); n < p.Settings.Min {
			out[node] = max(p.Settings.Batch, p.Settings.Min-n)
		}
	}
	return out
}

// refill creates n ports for node, on its target, in one bulk request (a
// VM's then become subports of its trunk, in one more). After a refill
// whose outcome is unknown, it first looks for the ports that one may have
// made.
func (p *Pool) refill(ctx context.Context, node string, n int) error {
	p.mu.Lock()
	target, vm := p.target(node), p.onVM[node]
	p.mu.Unlock()
	if target.SubnetID == "" {
		return nil // the next round, once the node's target is known
	}
	if pending, left := p.unclear.Pending(node); pending {
		if left > 0 {
			return nil // a later tick looks, once
		}
		found, underway, err := p.adopt(ctx, node)
		if err != nil {
			return err
		}
		if underway > 0 {
			return nil // still pending: the next round looks again
		}
		if found > 0 {
			p.unclear.Clear(node)
			return nil // deficits are recomputed
		}
		p.unclear.GiveUp(node)
	}
	ports, err := p.Neutron.CreatePorts(ctx, p.specs(target, node, n, p.Groups(ctx), vm))
	if vm {
		defer p.attach(ctx, node, ports) // after the pool has them
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if err != nil && len(ports) == 0 {
		if openstack.Unclear(err) {
			p.unclear.Mark(node)
		}
		return err
	}
	p.unclear.Clear(node) // answered: the next unclear refill waits the base settle time
	if !p.nodes[node] {
		return err // pruned meanwhile: the sweep deletes them
	}
	// Created, even when tagging some of them failed after (err): the pool
	// keeps them all, tagged or not.
	for i := range ports {
		if names.PoolNodeOf(ports[i].Tags) == "" {
			ports[i].Tags = append(ports[i].Tags, names.PoolTag(node))
		}
		if vm && !slices.Contains(ports[i].Tags, names.PoolSubportTag) {
			ports[i].Tags = append(ports[i].Tags, names.PoolSubportTag)
		}
	}
	p.learn(ports, nil)
	if err != nil {
		return err
	}
	log.FromContext(ctx).Info("port pool refilled", "node", node, "created", len(ports), "subnet", target.SubnetID)
	return nil
}

// adopt adds to the pool the node's pooled ports Neutron has finished
// creating and the pool does not know, and returns how many, and how many
// more Neutron is still creating: those are left for the next round, never
// handed out or written meanwhile.
func (p *Pool) adopt(ctx context.Context, node string) (adopted, underway int, err error) {
	ports, err := p.Neutron.ListPorts(ctx, []string{names.ClusterTag(p.Spec.Cluster), names.PoolTag(node)}, "")
	if err != nil {
		return 0, 0, err
	}
	now := time.Now()
	var done []neutron.Port
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, port := range ports {
		if _, known := p.ports[port.ID]; known {
			continue
		}
		if !neutron.CreateFinished(&port, p.Spec.BindTimeout, now) {
			underway++
			continue
		}
		done = append(done, port)
	}
	adopted = p.learn(done, nil)
	if adopted > 0 || underway > 0 {
		log.FromContext(ctx).Info("port pool adopted ports of an unclear refill", "node", node, "adopted", adopted, "stillBeingCreated", underway)
	}
	return adopted, underway, nil
}

// Groups are the groups pooled ports are made with, and given back when a
// pod releases one: pod_security_groups and the Defaults (those of a pod
// nothing selects), or pod_security_groups alone while the Defaults cannot
// be told (a port taken then gets its groups written, as any other).
func (p *Pool) Groups(ctx context.Context) []string {
	if p.Defaults == nil {
		return p.Spec.SecurityGroups
	}
	extra, err := p.Defaults.DefaultGroups(ctx)
	if err != nil {
		log.FromContext(ctx).Info("pooled ports made without the default groups", "error", err.Error())
		return p.Spec.SecurityGroups
	}
	return union(p.Spec.SecurityGroups, extra)
}

// specs are n ports for node on target, with groups: bound to node, or
// unbound for a VM's trunk (vm).
func (p *Pool) specs(target Target, node string, n int, groups []string, vm bool) []neutron.PortSpec {
	host, tags := node, append([]string{names.ClusterTag(p.Spec.Cluster), names.PoolTag(node)}, p.Spec.ExtraTags...)
	if vm {
		host = "" // a subport takes its trunk's binding
		tags = append(tags, names.PoolSubportTag)
	}
	specs := make([]neutron.PortSpec, n)
	for i := range specs {
		specs[i] = neutron.PortSpec{
			Name: names.PoolPortName, NetworkID: target.NetworkID, SubnetID: target.SubnetID,
			ProjectID: p.Spec.ProjectID, HostID: host, DeviceOwner: DeviceOwner,
			SecurityGroups: groups,
			Tags:           slices.Clone(tags),
		}
	}
	return specs
}
