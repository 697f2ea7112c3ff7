package daemon

import (
	"context"
	"net/netip"
	"sync"
	"sync/atomic"

	kuryrv1 "github.com/kuryr-k8s/kuryr/api/v1"
)

// Registry holds this node's KuryrPorts as the watch delivers them, and
// wakes requests waiting for one to change: a CNI ADD reacts to the
// controller's status write within the watch latency, never by polling.
type Registry struct {
	mu      sync.Mutex
	ports   map[string]*kuryrv1.KuryrPort // namespace/name
	changed chan struct{}                 // closed and replaced on every change
	waiting atomic.Int32                  // requests in Wait
}

// waiters is how many requests are waiting in Wait.
func (r *Registry) waiters() int { return int(r.waiting.Load()) }

// NewRegistry returns an empty registry.
func NewRegistry() *Registry {
	return &Registry{ports: map[string]*kuryrv1.KuryrPort{}, changed: make(chan struct{})}
}

func key(ns, name string) string { return ns + "/" + name }

// Set records the latest state of a KuryrPort.
func (r *Registry) Set(kp *kuryrv1.KuryrPort) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ports[key(kp.Namespace, kp.Name)] = kp
	r.notify()
}

// Remove forgets a deleted KuryrPort.
func (r *Registry) Remove(ns, name string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.ports, key(ns, name))
	r.notify()
}

func (r *Registry) notify() {
	close(r.changed)
	r.changed = make(chan struct{})
}

// Holds says whether ip is an address of one of this node's KuryrPorts
// (a pod of this node's, as the controller made its port).
func (r *Registry) Holds(ip netip.Addr) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, kp := range r.ports {
		for _, v := range kp.Status.VIFs {
			for _, a := range v.IPs {
				if p, err := netip.ParsePrefix(a.Address); err == nil && p.Addr() == ip {
					return true
				}
			}
		}
	}
	return false
}

// Get returns the KuryrPort of a pod, if known.
func (r *Registry) Get(ns, name string) (*kuryrv1.KuryrPort, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	kp, ok := r.ports[key(ns, name)]
	return kp, ok
}

// Wait returns the pod's KuryrPort once cond holds for it, or ctx's error.
func (r *Registry) Wait(ctx context.Context, ns, name string, cond func(*kuryrv1.KuryrPort) bool) (*kuryrv1.KuryrPort, error) {
	r.waiting.Add(1)
	defer r.waiting.Add(-1)
	for {
		r.mu.Lock()
		kp, ok := r.ports[key(ns, name)]
		changed := r.changed
		r.mu.Unlock()
		if ok && cond(kp) {
			return kp, nil
		}
		select {
		case <-ctx.Done():
			return kp, ctx.Err()
		case <-changed:
		}
	}
}
