package loadbalancer

import (
	"context"
	"strings"
	"testing"

	kuryrv1 "github.com/kuryr-k8s/kuryr/api/v1"
	"github.com/kuryr-k8s/kuryr/pkg/controller/kit/kittest"
	"github.com/kuryr-k8s/kuryr/pkg/names"
)

// affinities are the SOURCE_IP persistence timeouts of the load
// balancer's pools, by protocol, and the names of all its pools.
func (e *env) affinities(t *testing.T) (map[string]int32, []string) {
	t.Helper()
	ps, err := e.r.Octavia.Pools(context.Background(), e.klb(t).Status.LoadBalancer.ID)
	if err != nil {
		t.Fatal(err)
	}
	out, pools := map[string]int32{}, []string{}
	for _, p := range ps {
		out[p.Protocol] = p.AffinityTimeout
		pools = append(pools, p.Name)
	}
	return out, pools
}

func (e *env) setAffinity(t *testing.T, timeout int32) {
	t.Helper()
	klb := e.klb(t)
	klb.Spec.AffinityTimeoutSeconds = timeout
	if err := e.cl.Update(context.Background(), klb); err != nil {
		t.Fatal(err)
	}
}

// TestAffinityEnforced: a provider that implements SOURCE_IP persistence
// (ovn-octavia-provider >= 5.0) refuses the probe, and every pool gets the
// Service's timeout; a new timeout is one update per pool, no affinity a
// new pool (the provider clears its OVN affinity only with the pool).
func TestAffinityEnforced(t *testing.T) {
	e := newEnv(t, "ClusterIP")
	e.oct.SessionPersistence = true
	ev := &kittest.Events{}
	e.r.Recorder = ev
	e.setAffinity(t, 10800)
	e.converge(t)
	got, pools := e.affinities(t)
	if got["TCP"] != 10800 || got["UDP"] != 10800 || len(pools) != 2 {
		t.Fatalf("pools %v, affinity %v; want both pools at 10800 s", pools, got)
	}
	if st := e.klb(t).Status.SessionAffinity; st != kuryrv1.AffinityEnforced {
		t.Fatalf("status.sessionAffinity %q", st)
	}
	if w := ev.Notes("NotEnforced"); len(w) != 0 {
		t.Fatalf("Warnings %v", w)
	}
	// The create, the refused probe, then one update per pool (the
	// provider was not known when the load balancer was created).
	if n := e.oct.Requests["POST pools"]; n != 1 {
		t.Fatalf("%d pool creates, want 1 (the probe): %v", n, e.oct.Requests)
	}

	before := e.oct.Requests["PUT pools"]
	e.setAffinity(t, 60)
	e.converge(t)
	if got, _ := e.affinities(t); got["TCP"] != 60 || got["UDP"] != 60 {
		t.Fatalf("affinity %v, want 60 s", got)
	}
	if n := e.oct.Requests["PUT pools"] - before; n != 2 {
		t.Fatalf("%d pool updates for a new timeout, want 2", n)
	}

	e.setAffinity(t, 0)
	e.converge(t)
	if got, pools := e.affinities(t); got["TCP"] != 0 || got["UDP"] != 0 || len(pools) != 2 {
		t.Fatalf("pools %v, affinity %v; want 2 pools without it", pools, got)
	}
	if st := e.klb(t).Status.SessionAffinity; st != "" {
		t.Fatalf("status.sessionAffinity %q without affinity", st)
	}
	if n := e.oct.Requests["DELETE pools"]; n != 2 {
		t.Fatalf("%d pool deletes, want 2 (replaced)", n)
	}
}

// TestAffinityNotEnforced: a provider that takes any persistence type
// (ovn-octavia-provider before 5.0 ignores them all): one Warning, the
// probe's pool removed, the pools left without persistence, and a second
// Service is not probed again.
func TestAffinityNotEnforced(t *testing.T) {
	e := newEnv(t, "ClusterIP")
	ev := &kittest.Events{}
	e.r.Recorder = ev
	e.setAffinity(t, 10800)
	e.converge(t)
	got, pools := e.affinities(t)
	if got["TCP"] != 0 || got["UDP"] != 0 || len(pools) != 2 {
		t.Fatalf("pools %v, affinity %v; want the 2 Service pools, no persistence", pools, got)
	}
	for _, p := range pools {
		if p == names.AffinityProbePool {
			t.Fatalf("the probe's pool is left: %v", pools)
		}
	}
	if st := e.klb(t).Status.SessionAffinity; st != kuryrv1.AffinityNotEnforced {
		t.Fatalf("status.sessionAffinity %q", st)
	}
	w := ev.Notes("NotEnforced")
	if len(w) != 1 || !strings.Contains(w[0], "takes any session persistence type") {
		t.Fatalf("Warnings %v, want one saying why", w)
	}
	// Reconciled again: no new Warning, no new probe.
	probes := e.oct.Requests["POST pools"]
	e.setAffinity(t, 60)
	e.converge(t)
	if n := e.oct.Requests["POST pools"]; n != probes {
		t.Fatalf("probed again: %v", e.oct.Requests)
	}
	if w := ev.Notes("NotEnforced"); len(w) != 1 {
		t.Fatalf("Warnings %v, want still one", w)
	}
}

// TestAffinityReassertedAfterPoolDelete: the ovn provider keeps one
// affinity timeout per protocol and drops it when any pool of that
// protocol goes: removing one TCP port of a Service with affinity writes
// the other TCP pool's persistence again.
func TestAffinityReassertedAfterPoolDelete(t *testing.T) {
	e := newEnv(t, "ClusterIP")
	e.oct.SessionPersistence = true
	klb := e.klb(t)
	klb.Spec.AffinityTimeoutSeconds = 300
	klb.Spec.Ports = append(klb.Spec.Ports, kuryrv1.LoadBalancerPort{Name: "https", Protocol: "TCP", Port: 443, Members: members("10.10.0.4")})
	if err := e.cl.Update(context.Background(), klb); err != nil {
		t.Fatal(err)
	}
	e.converge(t)
	klb = e.klb(t)
	klb.Spec.Ports = klb.Spec.Ports[:2] // the https port goes
	if err := e.cl.Update(context.Background(), klb); err != nil {
		t.Fatal(err)
	}
	puts := e.oct.Requests["PUT pools"]
	e.converge(t)
	if n := e.oct.Requests["DELETE pools"]; n != 1 {
		t.Fatalf("%d pool deletes, want 1", n)
	}
	if n := e.oct.Requests["PUT pools"] - puts; n != 2 {
		t.Fatalf("%d pool updates after the delete, want 2 (each remaining pool with persistence)", n)
	}
	if got, pools := e.affinities(t); got["TCP"] != 300 || got["UDP"] != 300 || len(pools) != 2 {
		t.Fatalf("pools %v, affinity %v", pools, got)
	}
}
