package loadbalancer

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"

	kuryrv1 "github.com/kuryr-k8s/kuryr/api/v1"
	"github.com/kuryr-k8s/kuryr/pkg/octavia"
	"github.com/kuryr-k8s/kuryr/pkg/octavia/octaviatest"
)

// TestNoWriteBeforeOctaviaShowsTheLast: the ovn provider works through a
// pool delete and a batch member update one member at a time, the load
// balancer ACTIVE in between (ovn-octavia-provider 8.0.0). The reconciler
// waits until Octavia shows its last write instead of writing again: a
// port change or a scale down makes the same writes as with a provider
// that applies each write at once, and no pool or load balancer is
// replaced.
func TestNoWriteBeforeOctaviaShowsTheLast(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(*kuryrv1.KuryrLoadBalancer)
	}{
		{"port change", func(k *kuryrv1.KuryrLoadBalancer) { k.Spec.Ports[0].Port = 8081 }},
		{"scale down", func(k *kuryrv1.KuryrLoadBalancer) { k.Spec.Ports[0].Members = members("10.10.0.9") }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			at := writesFor(t, false, tc.change)
			split := writesFor(t, true, tc.change)
			if !maps.Equal(at, split) {
				t.Fatalf("writes with the provider going member by member %v, want those of one applying each write at once %v", split, at)
			}
		})
	}
}

// writesFor converges a load balancer, changes its spec and returns the
// Octavia writes that converge it again.
func writesFor(t *testing.T, memberByMember bool, change func(*kuryrv1.KuryrLoadBalancer)) map[string]int {
	t.Helper()
	e := newEnv(t, "ClusterIP")
	e.converge(t)
	e.oct.MemberByMember = memberByMember
	klb := e.klb(t)
	change(klb)
	if err := e.cl.Update(context.Background(), klb); err != nil {
		t.Fatal(err)
	}
	before := maps.Clone(e.oct.Requests)
	e.converge(t)
	writes := map[string]int{}
	for k, n := range e.oct.Requests {
		if !strings.HasPrefix(k, "GET ") && n > before[k] {
			writes[k] = n - before[k]
		}
	}
	got := e.klb(t).Status
	want := 3 + len(klb.Spec.Ports[0].Members)
	if !meta.IsStatusConditionTrue(got.Conditions, kuryrv1.ConditionReady) || got.Members != want {
		t.Fatalf("status %+v, want Ready with %d members", got, want)
	}
	return writes
}

// TestUnansweredPoolDeleteIsNotSentAgain: a pool DELETE Octavia took but
// did not answer (a 504 from a proxy) is waited for like an answered one.
func TestUnansweredPoolDeleteIsNotSentAgain(t *testing.T) {
	e := newEnv(t, "ClusterIP")
	e.converge(t)
	e.oct.MemberByMember = true
	e.oct.Unanswered = func(method, coll string) (int, string) {
		if method == http.MethodDelete && coll == octaviatest.Pools {
			return http.StatusGatewayTimeout, "upstream timed out"
		}
		return 0, ""
	}
	klb := e.klb(t)
	klb.Spec.Ports[0].Port = 8081
	if err := e.cl.Update(context.Background(), klb); err != nil {
		t.Fatal(err)
	}
	e.converge(t)
	if n := e.oct.Requests["DELETE pools"]; n != 1 {
		t.Fatalf("%d pool deletes, want 1 (%v)", n, e.oct.Requests)
	}
}

// TestEchoWait: how long the reconciler waits for Octavia to show its last
// write, with a clock of its own.
func TestEchoWait(t *testing.T) {
	deleting := func(members int) observed {
		obs := observed{pools: []octavia.Pool{{ID: "p1", ProvisioningStatus: octavia.StatusActive}}, members: map[string][]octavia.Member{}}
		for i := range members {
			obs.members["p1"] = append(obs.members["p1"], octavia.Member{ID: fmt.Sprint("m", i), ProvisioningStatus: octavia.StatusActive})
		}
		return obs
	}
	del := step{kind: deletePool, id: "p1", why: "test"}
	type look struct {
		at      time.Duration // after the write
		obs     observed
		lb      string
		waiting bool
	}
	for _, tc := range []struct {
		name    string
		settled time.Duration // another load balancer settled this long after the write (0: none)
		looks   []look
	}{
		{"gone: shown", 0, []look{{time.Second, observed{}, "lb1", false}}},
		{"no progress: until the wait is over", 0, []look{
			{time.Second, deleting(3), "lb1", true}, {4 * time.Second, deleting(3), "lb1", true}, {12 * time.Second, deleting(3), "lb1", false}}},
		{"progress moves the wait on", 0, []look{
			{time.Second, deleting(3), "lb1", true}, {8 * time.Second, deleting(2), "lb1", true}, {12 * time.Second, deleting(2), "lb1", true},
			{14 * time.Second, deleting(2), "lb1", false}}},
		{"a busy provider: at most echoMax", 11 * time.Second, []look{
			{time.Second, deleting(3), "lb1", true}, {12 * time.Second, deleting(3), "lb1", true}, {echoMax, deleting(3), "lb1", false}}},
		{"another load balancer: forgotten", 0, []look{{time.Second, deleting(3), "lb2", false}, {2 * time.Second, deleting(3), "lb1", false}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t0 := time.Date(2026, 11, 27, 0, 0, 0, 0, time.UTC)
			now := t0
			p := &progress{now: func() time.Time { return now }}
			p.sent("svc", "lb1", del, echoWait(del, deleting(3))) // 3 s + 4 × 2 s
			if tc.settled > 0 {
				p.settled = t0.Add(tc.settled)
			}
			for _, l := range tc.looks {
				now = t0.Add(l.at)
				if w, _ := p.awaiting("svc", l.lb, l.obs); (w != "") != l.waiting {
					t.Fatalf("at %s: waiting %q, want waiting %v", l.at, w, l.waiting)
				}
			}
		})
	}
}
