package loadbalancer

import (
	"context"
	"maps"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"

	kuryrv1 "github.com/kuryr-k8s/kuryr/api/v1"
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
