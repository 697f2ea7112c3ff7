package loadbalancer

import (
	"context"
	"fmt"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/log"

	kuryrv1 "github.com/kuryr-k8s/kuryr/api/v1"
	"github.com/kuryr-k8s/kuryr/pkg/octavia"
)

// A Service's ClientIP affinity becomes SOURCE_IP session persistence on
// its pools where the provider enforces it. Whether it does is asked of the
// provider itself (octavia.ProbeAffinity), once per provider and process,
// on the first load balancer that needs to know, never inferred from the
// provider's name: ovn-octavia-provider takes SOURCE_IP from every release
// but maps it to OVN affinity only from 5.0.

// affinityProtocol: Octavia takes a persistence timeout on a pool's POST
// and PUT only for UDP and SCTP pools (400 "persistence_timeout and
// persistence_granularity is only for UDP and SCTP protocol pools" on
// TCP), and without one the ovn provider gives a TCP pool no OVN affinity
// on create and its own 360 s on update: a TCP port cannot have the
// Service's timeout, so it gets no affinity, and says so.
func affinityProtocol(protocol string) bool {
	return protocol == "UDP" || protocol == "SCTP"
}

// withoutAffinity are the Service's ports that cannot have affinity.
func withoutAffinity(klb *kuryrv1.KuryrLoadBalancer) []string {
	var out []string
	for _, p := range klb.Spec.Ports {
		if !affinityProtocol(p.Protocol) {
			out = append(out, fmt.Sprintf("%d/%s", p.Port, p.Protocol))
		}
	}
	return out
}

// affinityPool: the pool id is a UDP or SCTP pool of the observed ones
// (the ovn provider keeps one affinity per protocol: a TCP pool's delete
// leaves the others' alone).
func affinityPool(pools []octavia.Pool, id string) bool {
	for _, p := range pools {
		if p.ID == id {
			return affinityProtocol(p.Protocol)
		}
	}
	return false
}

// warnings are the last affinity Warning given for each Service, in this
// process: a Warning is given when what it would say changes.
type warnings struct {
	mu   sync.Mutex
	last map[string]string
}

// changed records note for uid and says whether it differs from the last.
func (w *warnings) changed(uid, note string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.last == nil {
		w.last = map[string]string{}
	}
	if w.last[uid] == note {
		return false
	}
	w.last[uid] = note
	return true
}

// forget drops a Service that is gone.
func (w *warnings) forget(uid string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.last, uid)
}

// affinityProbes holds what each provider showed; workers share it.
type affinityProbes struct {
	mu   sync.Mutex
	seen map[string]octavia.AffinityProbe
}

func (a *affinityProbes) get(provider string) (octavia.AffinityProbe, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	p, ok := a.seen[provider]
	return p, ok
}

func (a *affinityProbes) set(provider string, p octavia.AffinityProbe) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.seen == nil {
		a.seen = map[string]octavia.AffinityProbe{}
	}
	a.seen[provider] = p
}

// affinity is the persistence timeout the pools get (the spec's where the
// provider enforces it, else 0) and records in the status whether it is in
// force, warning the user once when it is not. probed: a probe was made
// (one write; a pool it left behind has no listener and goes with the
// plan), look again.
func (r *Reconciler) affinity(ctx context.Context, klb *kuryrv1.KuryrLoadBalancer, lb *octavia.LoadBalancer, uid string) (timeout int32, probed bool, err error) {
	want := klb.Spec.AffinityTimeoutSeconds
	if want <= 0 {
		klb.Status.SessionAffinity = ""
		r.warned.forget(uid)
		return 0, false, nil
	}
	tcp := withoutAffinity(klb)
	if len(tcp) == len(klb.Spec.Ports) { // nothing a probe could change
		r.affinityStatus(ctx, klb, uid, kuryrv1.AffinityNotEnforced, fmt.Sprintf("sessionAffinity ClientIP is not enforced "+
			"on ports %s: Octavia takes a persistence timeout only on UDP and SCTP pools", strings.Join(tcp, ", ")))
		return 0, false, nil
	}
	p, ok := r.probes.get(lb.Provider)
	if !ok {
		if p, err = r.Octavia.ProbeAffinity(ctx, lb.ID, klb.Spec.Algorithm, r.tags(uid)); err != nil {
			return 0, false, err
		}
		r.probes.set(lb.Provider, p)
		log.FromContext(ctx).Info("octavia provider probed", "provider", lb.Provider, "feature", "SOURCE_IP session persistence",
			"enforced", p.Enforced, "why", p.Why, "loadBalancer", lb.ID)
		return 0, true, nil
	}
	if !p.Enforced {
		r.affinityStatus(ctx, klb, uid, kuryrv1.AffinityNotEnforced, fmt.Sprintf("sessionAffinity ClientIP is not enforced: "+
			"the %s provider does not implement SOURCE_IP session persistence: %s", lb.Provider, p.Why))
		return 0, false, nil
	}
	if len(tcp) == 0 {
		r.affinityStatus(ctx, klb, uid, kuryrv1.AffinityEnforced, "")
		return want, false, nil
	}
	r.affinityStatus(ctx, klb, uid, kuryrv1.AffinityPartial, fmt.Sprintf("sessionAffinity ClientIP is enforced on the "+
		"UDP and SCTP ports only, not on %s: Octavia takes a persistence timeout only on UDP and SCTP pools",
		strings.Join(tcp, ", ")))
	return want, false, nil
}

// affinityStatus records whether the affinity is in force, with a Warning
// (note, when not wholly) each time what it says changes.
func (r *Reconciler) affinityStatus(ctx context.Context, klb *kuryrv1.KuryrLoadBalancer, uid, status, note string) {
	if r.warned.changed(uid, status+": "+note) && note != "" {
		r.event(ctx, klb, corev1.EventTypeWarning, "NotEnforced", "Ensure", "%s", note)
	}
	klb.Status.SessionAffinity = status
}

// createAffinity is the persistence a new load balancer's pools are created
// with: the spec's where the provider is known to enforce it, else none
// (an unprobed provider is probed once the load balancer is ACTIVE, and
// the pools follow).
func (r *Reconciler) createAffinity(klb *kuryrv1.KuryrLoadBalancer) int32 {
	if p, ok := r.probes.get(klb.Spec.Provider); ok && p.Enforced {
		return klb.Spec.AffinityTimeoutSeconds
	}
	return 0
}

// reasserts are the load balancers whose pools' persistence must be set
// again: the ovn provider keeps one affinity timeout per OVN load balancer
// (one per protocol), shared by the pools of that protocol, and removes it
// when any of them is deleted. After a pool of a load balancer with
// affinity goes, each remaining pool with persistence is written again
// (one write each, in turn). Kept in memory: a controller restarted
// between the delete and the rewrite leaves the other ports without
// affinity until their pools are next written.
type reasserts struct {
	mu   sync.Mutex
	todo map[string]map[string]bool // service uid -> pools done
}

func (r *reasserts) mark(uid string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.todo == nil {
		r.todo = map[string]map[string]bool{}
	}
	r.todo[uid] = map[string]bool{}
}

// forget drops a Service that is gone.
func (r *reasserts) forget(uid string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.todo, uid)
}

// next is the next pool to write again ("" when none is left).
func (r *reasserts) next(uid string, pools []octavia.Pool) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	done, ok := r.todo[uid]
	if !ok {
		return ""
	}
	for _, p := range pools {
		if p.AffinityTimeout > 0 && !done[p.ID] {
			done[p.ID] = true
			return p.ID
		}
	}
	delete(r.todo, uid)
	return ""
}
