package kuryrport

import (
	"slices"
	"sync"
	"time"

	"github.com/kuryr-k8s/kuryr/pkg/controller/portgroups"
	"github.com/kuryr-k8s/kuryr/pkg/names"
	"github.com/kuryr-k8s/kuryr/pkg/neutron"
	"github.com/kuryr-k8s/kuryr/pkg/openstack"
)

// PoolSettings are the [vif_pool] options.
type PoolSettings struct {
	Min, Max, Batch int
}

// Pool keeps ready Neutron ports per node (on the node's target, with the
// pod security groups): the original kuryr's main start-up optimisation. A
// pod takes a port without any Neutron request; the port's creation
// happened earlier, in bulk, off the pod's critical path.
//
// Every port the pool knows has exactly one state (free, held by a pod, or
// being deleted) in one map, and a node's free list holds a port only while
// its state is free: a port cannot be free twice, nor free while a pod
// holds it, whatever order releases, retries and restarts come in.
//
// Each node's ports go on the network and subnet Targets says for it: the
// default subnet for every node, or the node's own network (node mode). A
// node is refilled only once its target is known, and a pod is handed only
// a port on the target it asks for; free ports left on another one (the
// node's network removed, or the configuration changed) are deleted.
//
// A nested-vlan VM node's pool holds unbound ports attached in advance as
// subports of its trunk (one add_subports per refill), a hypervisor's ports
// bound to it; a port is handed out only to a pod of a node of its kind.
type Pool struct {
	mu      sync.Mutex
	ports   map[string]*pooled   // port id -> state
	free    map[string][]string  // node -> free port ids, most recent last
	nodes   map[string]bool      // nodes to keep filled
	targets map[string]Target    // node -> where its ports go, once asked (Target{}: nowhere now)
	onVM    map[string]bool      // node -> whether its ports are a VM trunk's subports, once asked
	unclear openstack.Unanswered // nodes whose last refill went unanswered
	kick    chan struct{}
	Targets NodeTargetFunc
	Neutron poolAPI
	// Nested, when set, says how each node's pods are plugged and attaches
	// a nested-vlan VM's pooled ports to its trunk; without it every node
	// is a hypervisor.
	Nested poolPlacer
	// Settings are the pool's bounds, Spec what its ports are created with.
	Settings PoolSettings
	Spec     Settings
	// Defaults, when set, gives the groups a pod that nothing selects
	// carries beyond Spec's: ports are created with them too.
	Defaults portgroups.Defaults
}

type portState int

const (
	stateFree portState = iota
	stateHeld
	stateRetiring
	// stateGone: deleted; remembered for a while so that a listing taken
	// before the delete cannot bring it back.
	stateGone
)

// goneMemory is how long deleted ports are remembered.
const goneMemory = 10 * time.Minute

type pooled struct {
	port      neutron.Port
	node      string
	vm        bool // unbound: a VM trunk's subport, not a hypervisor's port
	attached  bool // vm: known to be a subport of its node's trunk
	state     portState
	holder    string    // pod UID while held
	goneAt    time.Time // when deleted
	retiredAt time.Time // when it started retiring
}

// retireGrace is how long a retiring port waits for its release's delete
// before the pool deletes it itself.
const retireGrace = time.Minute

// Release says what to do with a port a pod gave back.
type Release int

const (
	// Returned: the port is back in its node's pool.
	Returned Release = iota
	// Retire: the pool is full; delete the port, then call Forget.
	Retire
	// NotOurs: another pod holds the port now (a release retried after the
	// port was handed out again); leave it alone.
	NotOurs
)

// NewPool returns an empty pool, which asks targets where each node's
// ports go.
func NewPool(n poolAPI, targets NodeTargetFunc, s PoolSettings, spec Settings) *Pool {
	return &Pool{ports: map[string]*pooled{}, free: map[string][]string{}, nodes: map[string]bool{},
		targets: map[string]Target{}, onVM: map[string]bool{}, kick: make(chan struct{}, 1), Targets: targets, Neutron: n, Settings: s, Spec: spec}
}

// Take hands out a ready port of node, on t, to the pod podUID, if one is
// free, and asks for a refill. vm says which kind the pod needs: a
// subport of node's trunk, or a port bound to node.
func (p *Pool) Take(node, podUID string, t Target, vm bool) (neutron.Port, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.nodes[node] = true
	p.signal()
	ids := p.free[node]
	for j := range ids {
		// A hypervisor's most recent first; a VM's oldest first: a
		// subport keeps its VLAN id, which the namespace of the pod that
		// released it may still hold for a while.
		i := len(ids) - 1 - j
		if vm {
			i = j
		}
		e := p.ports[ids[i]]
		if !on(e.port, t) || e.vm != vm {
			continue // misplaced: trim deletes it
		}
		p.free[node] = append(ids[:i:i], ids[i+1:]...)
		e.state, e.holder = stateHeld, podUID
		p.gauge(node)
		return e.port, true
	}
	return neutron.Port{}, false
}

// Holds says whether the pool records the port as held by the pod.
func (p *Pool) Holds(portID, podUID string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	e, ok := p.ports[portID]
	return ok && e.state == stateHeld && e.holder == podUID
}

// Release takes back a port the pod podUID held; port carries the groups
// it has now (its holder, not the pool, wrote them last), or none if the
// caller does not know them (the pool's record stays).
func (p *Pool) Release(port neutron.Port, podUID string) Release {
	p.mu.Lock()
	defer p.mu.Unlock()
	e, known := p.ports[port.ID]
	switch {
	case !known:
		// The pool, loaded before any release, knows every pooled port
		// that exists: this one is a pod's own port, or deleted already.
		return Retire
	case e.state == stateFree:
		return Returned
	case e.state == stateRetiring || e.state == stateGone:
		return Retire
	case e.holder != podUID:
		return NotOurs
	}
	if (p.Settings.Max > 0 && len(p.free[e.node]) >= p.Settings.Max) || !p.nodes[e.node] || p.misplaced(e) {
		e.state, e.holder, e.retiredAt = stateRetiring, "", time.Now()
		return Retire
	}
	if port.SecurityGroups != nil { // a copy that knows them (not one made from a VIF)
		e.port.SecurityGroups = slices.Clone(port.SecurityGroups)
	}
	p.makeFree(e)
	return Returned
}

// Forget records that a port was deleted.
func (p *Pool) Forget(portID string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	e, ok := p.ports[portID]
	if !ok {
		e = &pooled{}
		p.ports[portID] = e
	}
	if e.state == stateFree {
		p.dropFree(e)
	}
	e.state, e.holder, e.goneAt = stateGone, "", time.Now()
}

// FreeCount is the number of free ports of node.
func (p *Pool) FreeCount(node string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.free[node])
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
	for id, e := range p.ports {
		switch {
		case e.state == stateGone && time.Since(e.goneAt) > goneMemory:
			delete(p.ports, id)
		case e.state == stateFree && !live[e.node]:
			// Its node is gone: the sweep deletes it.
			e.state, e.goneAt = stateGone, time.Now()
		}
	}
	for node := range p.free {
		if !live[node] {
			delete(p.free, node)
			poolFree.DeleteLabelValues(node)
		}
	}
	for node := range p.nodes {
		if !live[node] {
			delete(p.nodes, node)
			delete(p.targets, node)
			delete(p.onVM, node)
			p.unclear.Clear(node)
		}
	}
}

// learn records ports found in Neutron that the pool does not know: free,
// or held by the pod holders names. Callers hold p.mu.
func (p *Pool) learn(ports []neutron.Port, holders map[string]string) int {
	n := 0
	for _, port := range ports {
		node := names.PoolNodeOf(port.Tags)
		if _, known := p.ports[port.ID]; known || node == "" {
			continue
		}
		e := &pooled{port: port, node: node, vm: slices.Contains(port.Tags, names.PoolSubportTag),
			attached: port.DeviceOwner == neutron.SubportOwner}
		p.ports[port.ID] = e
		if pod, held := holders[port.ID]; held {
			e.state, e.holder = stateHeld, pod
			continue
		}
		p.makeFree(e)
		n++
	}
	return n
}

// Adopt learns the pooled ports of live nodes among ports (the cluster's,
// as the sweep lists them) that the pool does not know: those of a refill
// Neutron committed after kuryr had given up on it, however late, once
// Neutron is done creating them (neutron.CreateFinished). holders
// maps the ports KuryrPort statuses name to their pods. It returns how many
// it adopted.
func (p *Pool) Adopt(ports []neutron.Port, holders map[string]string, live map[string]bool) int {
	var mine []neutron.Port
	for _, port := range ports {
		if node := names.PoolNodeOf(port.Tags); node != "" && live[node] {
			mine = append(mine, port)
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.learn(p.finished(mine, holders), holders) // one still being created: a later sweep
}

// makeFree puts a port that is not free on its node's free list. Callers
// hold p.mu.
func (p *Pool) makeFree(e *pooled) {
	e.state, e.holder = stateFree, ""
	p.free[e.node] = append(p.free[e.node], e.port.ID)
	p.gauge(e.node)
}

// dropFree takes a free port off its node's list. Callers hold p.mu.
func (p *Pool) dropFree(e *pooled) {
	ids := p.free[e.node]
	for i, id := range ids {
		if id == e.port.ID {
			p.free[e.node] = append(ids[:i:i], ids[i+1:]...)
			break
		}
	}
	p.gauge(e.node)
}

// gauge publishes a node's free count; callers hold p.mu.
func (p *Pool) gauge(node string) { poolFree.WithLabelValues(node).Set(float64(len(p.free[node]))) }

func (p *Pool) signal() {
	select {
	case p.kick <- struct{}{}:
	default:
	}
}
