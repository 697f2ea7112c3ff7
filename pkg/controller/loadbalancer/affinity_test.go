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
	e.mutateSpec(t, func(s *kuryrv1.KuryrLoadBalancerSpec) { s.AffinityTimeoutSeconds = timeout })
}

// TestAffinityEnforced: a provider that implements SOURCE_IP persistence
// (ovn-octavia-provider >= 5.0) refuses the probe, and every UDP pool gets
// the Service's timeout (Octavia takes none on a TCP pool: the status says
// Partial, and a Warning names the TCP port); a new timeout is one update
// per such pool, no affinity a new pool (the provider clears its OVN
// affinity only with the pool).
func TestAffinityEnforced(t *testing.T) {
	e := newEnv(t, "ClusterIP")
	e.oct.SessionPersistence = true
	e.partial(t, 10800)
	// The create, the refused probe, then one update per pool (the
	// provider was not known when the load balancer was created).
	if n := e.oct.Requests["POST pools"]; n != 1 {
		t.Fatalf("%d pool creates, want 1 (the probe): %v", n, e.oct.Requests)
	}

	before := e.oct.Requests["PUT pools"]
	e.setAffinity(t, 60)
	e.converge(t)
	if got, _ := e.affinities(t); got["TCP"] != 0 || got["UDP"] != 60 {
		t.Fatalf("affinity %v, want 60 s on UDP", got)
	}
	if n := e.oct.Requests["PUT pools"] - before; n != 1 {
		t.Fatalf("%d pool updates for a new timeout, want 1", n)
	}

	e.setAffinity(t, 0)
	e.converge(t)
	if got, pools := e.affinities(t); got["TCP"] != 0 || got["UDP"] != 0 || len(pools) != 2 {
		t.Fatalf("pools %v, affinity %v; want 2 pools without it", pools, got)
	}
	if st := e.klb(t).Status.SessionAffinity; st != "" {
		t.Fatalf("status.sessionAffinity %q without affinity", st)
	}
	if n := e.oct.Requests["DELETE pools"]; n != 1 {
		t.Fatalf("%d pool deletes, want 1 (the UDP pool replaced)", n)
	}
}

// partial asks for affinity with timeout on the env's TCP and UDP ports of
// a provider that enforces it: the UDP pool has it, the TCP pool not, the
// status is Partial and one Warning names the TCP port.
func (e *env) partial(t *testing.T, timeout int32) {
	t.Helper()
	ev := &kittest.Events{}
	e.r.Recorder = ev
	e.setAffinity(t, timeout)
	e.converge(t)
	got, pools := e.affinities(t)
	if got["TCP"] != 0 || got["UDP"] != timeout || len(pools) != 2 {
		t.Fatalf("pools %v, affinity %v; want the UDP pool at %d s, the TCP pool without", pools, got, timeout)
	}
	if st := e.klb(t).Status.SessionAffinity; st != kuryrv1.AffinityPartial {
		t.Fatalf("status.sessionAffinity %q", st)
	}
	if w := ev.Notes("NotEnforced"); len(w) != 1 || !strings.Contains(w[0], "not on 80/TCP") {
		t.Fatalf("Warnings %v, want one naming the TCP port", w)
	}
}

// TestAffinityEnforcedRefusalCrashes: ovn-octavia-provider 8.0.0 fails
// (500) while refusing HTTP_COOKIE, twice the same; the probe then asks
// for a SOURCE_IP pool, which it takes: enforced, and that pool goes. Its
// pool update fails without admin_state_up in the request: the UDP pool
// is updated, not left in ERROR and replaced.
func TestAffinityEnforcedRefusalCrashes(t *testing.T) {
	e := newEnv(t, "ClusterIP")
	e.oct.SessionPersistence = true
	e.oct.RefusalCrashes = true
	e.oct.PoolUpdateCrashes = true
	e.partial(t, 600)
	if n := e.oct.Requests["PUT pools"]; n != 1 {
		t.Fatalf("%d pool updates, want 1 (the UDP pool's persistence): %v", n, e.oct.Requests)
	}
	if n := e.oct.Requests["POST pools"]; n != 3 {
		t.Fatalf("%d pool creates, want 3 (HTTP_COOKIE refused twice, SOURCE_IP taken): %v", n, e.oct.Requests)
	}
	if n := e.oct.Requests["DELETE pools"]; n != 1 {
		t.Fatalf("%d pool deletes, want 1 (the probe's)", n)
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
// protocol goes: removing one UDP port of a Service with affinity writes
// the other UDP pool's persistence again.
func TestAffinityReassertedAfterPoolDelete(t *testing.T) {
	e := newEnv(t, "ClusterIP")
	e.oct.SessionPersistence = true
	klb := e.klb(t)
	klb.Spec.AffinityTimeoutSeconds = 300
	klb.Spec.Ports = append(klb.Spec.Ports, kuryrv1.LoadBalancerPort{Name: "dns", Protocol: "UDP", Port: 53, Members: members("10.10.0.4")})
	if err := e.cl.Update(context.Background(), klb); err != nil {
		t.Fatal(err)
	}
	e.converge(t)
	klb = e.klb(t)
	klb.Spec.Ports = klb.Spec.Ports[:2] // the dns port goes
	if err := e.cl.Update(context.Background(), klb); err != nil {
		t.Fatal(err)
	}
	puts := e.oct.Requests["PUT pools"]
	e.converge(t)
	if n := e.oct.Requests["DELETE pools"]; n != 1 {
		t.Fatalf("%d pool deletes, want 1", n)
	}
	if n := e.oct.Requests["PUT pools"] - puts; n != 1 {
		t.Fatalf("%d pool updates after the delete, want 1 (the remaining pool with persistence)", n)
	}
	if got, pools := e.affinities(t); got["TCP"] != 0 || got["UDP"] != 300 || len(pools) != 2 {
		t.Fatalf("pools %v, affinity %v", pools, got)
	}
}

// TestAffinityTCPOnly: a Service whose ports are all TCP cannot have
// affinity whatever the provider: NotEnforced with a Warning naming the
// ports, and the provider is not probed.
func TestAffinityTCPOnly(t *testing.T) {
	e := newEnv(t, "ClusterIP")
	e.oct.SessionPersistence = true
	ev := &kittest.Events{}
	e.r.Recorder = ev
	klb := e.klb(t)
	klb.Spec.Ports = klb.Spec.Ports[:1]
	klb.Spec.AffinityTimeoutSeconds = 300
	if klb.Spec.Ports[0].Protocol != "TCP" {
		t.Fatalf("port %+v", klb.Spec.Ports[0])
	}
	if err := e.cl.Update(context.Background(), klb); err != nil {
		t.Fatal(err)
	}
	e.converge(t)
	if st := e.klb(t).Status.SessionAffinity; st != kuryrv1.AffinityNotEnforced {
		t.Fatalf("status.sessionAffinity %q", st)
	}
	if n := e.oct.Requests["POST pools"]; n != 0 {
		t.Fatalf("%d pool creates, want none (no probe)", n)
	}
	e.converge(t)
	if w := ev.Notes("NotEnforced"); len(w) != 1 || !strings.Contains(w[0], "on ports 80/TCP") {
		t.Fatalf("Warnings %v, want one naming the port", w)
	}
}
