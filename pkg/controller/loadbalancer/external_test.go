package loadbalancer

import (
	"context"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"

	kuryrv1 "github.com/kuryr-k8s/kuryr/api/v1"
	"github.com/kuryr-k8s/kuryr/pkg/names"
	"github.com/kuryr-k8s/kuryr/pkg/neutron"
)

// userFIP adds a floating IP the user allocated (or the original kuryr,
// which described its own "kuryr_lb" and left them untagged).
func (e *env) userFIP(id, addr, desc string, tags ...string) {
	e.fip.all[id] = &neutron.FloatingIP{ID: id, Address: addr, NetworkID: "public", Description: desc, Tags: tags}
}

func (e *env) setSpec(t *testing.T, mut func(typ *string, lbIP *string, externalIPs *[]string)) {
	t.Helper()
	e.mutateSpec(t, func(s *kuryrv1.KuryrLoadBalancerSpec) { mut(&s.Type, &s.LoadBalancerIP, &s.ExternalIPs) })
}

func (e *env) deleteKLB(t *testing.T) {
	t.Helper()
	if err := e.cl.Delete(context.Background(), e.klb(t)); err != nil {
		t.Fatal(err)
	}
	e.converge(t)
}

// An address the user named in loadBalancerIP is never deleted by kuryr:
// not one described like the original's, nor one kuryr once allocated
// (it is handed over: kuryr's tags go).
func TestNamedFloatingIPIsNeverDeleted(t *testing.T) {
	for _, tc := range []struct {
		name string
		desc string
		tags []string
	}{
		{"allocated by the user", "", nil},
		{"the original kuryr's, untagged", "kuryr_lb", nil},
		{"kuryr's, pinned by the user", fipDescription(svcUID), []string{names.ClusterTag("c1"), names.ServiceTag(svcUID)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, end := range []string{"Service deleted", "loadBalancerIP changed"} {
				e := newEnv(t, "LoadBalancer")
				e.userFIP("named", "172.24.4.50", tc.desc, tc.tags...)
				e.setSpec(t, func(_, lbIP *string, _ *[]string) { *lbIP = "172.24.4.50" })
				e.converge(t)
				if st := e.klb(t).Status.FloatingIP; st == nil || st.ID != "named" || st.AllocMethod != allocUser {
					t.Fatalf("%s: floating IP %+v, want the named one, the user's", end, st)
				}
				if end == "Service deleted" {
					e.deleteKLB(t)
				} else {
					e.setSpec(t, func(_, lbIP *string, _ *[]string) { *lbIP = "" })
					e.converge(t)
				}
				f, ok := e.fip.all["named"]
				if !ok {
					t.Fatalf("%s: the named floating IP was deleted", end)
				}
				if f.PortID != "" || names.ServiceUIDOf(f.Tags) != "" {
					t.Fatalf("%s: named floating IP left %+v, want disassociated and without kuryr's tags", end, f)
				}
			}
		})
	}
}

// externalIPs: the first one kuryr can serve becomes the VIP's floating IP;
// what kuryr allocated for it goes when it is removed, nothing else does.
func TestExternalIPs(t *testing.T) {
	for _, tc := range []struct {
		name      string
		existing  string // an address the project has already
		adminOnly bool
		ips       []string
		served    string
		alloc     string
		notServed []string // reasons, one per address not served
		keptAtEnd int      // floating IPs left once the externalIPs are gone
	}{
		{name: "a floating IP of the project", existing: "172.24.4.60", ips: []string{"172.24.4.60"},
			served: "172.24.4.60", alloc: allocUser, keptAtEnd: 1},
		{name: "allocated on the external network", ips: []string{"172.24.4.61"},
			served: "172.24.4.61", alloc: allocPool},
		{name: "Neutron lets only admins choose the address", adminOnly: true, ips: []string{"172.24.4.62"},
			notServed: []string{"only admins"}},
		{name: "not on the external network", ips: []string{"198.51.100.7"},
			notServed: []string{"neither a floating IP of the project nor an address of external_svc_net"}},
		{name: "one per VIP", existing: "172.24.4.60", ips: []string{"198.51.100.7", "172.24.4.60", "172.24.4.63"},
			served: "172.24.4.60", alloc: allocUser, keptAtEnd: 1,
			notServed: []string{"neither a floating IP", "the VIP carries one floating IP"}},
		{name: "one per VIP, the others each with its reason", existing: "172.24.4.60", ips: []string{"172.24.4.60", "198.51.100.7", "172.24.4.63"},
			served: "172.24.4.60", alloc: allocUser, keptAtEnd: 1,
			notServed: []string{"neither a floating IP", "the VIP carries one floating IP"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, "ClusterIP")
			e.fip.adminOnly = tc.adminOnly
			if tc.existing != "" {
				e.userFIP("existing", tc.existing, "")
			}
			e.setSpec(t, func(_, _ *string, ips *[]string) { *ips = tc.ips })
			e.converge(t)
			st := e.klb(t).Status
			switch {
			case tc.served == "" && st.FloatingIP != nil:
				t.Fatalf("floating IP %+v, want none", st.FloatingIP)
			case tc.served != "" && (st.FloatingIP == nil || st.FloatingIP.IP != tc.served || st.FloatingIP.AllocMethod != tc.alloc):
				t.Fatalf("floating IP %+v, want %s (%s)", st.FloatingIP, tc.served, tc.alloc)
			}
			if len(st.ExternalIPsNotServed) != len(tc.notServed) {
				t.Fatalf("not served %q, want %d", st.ExternalIPsNotServed, len(tc.notServed))
			}
			for i, why := range tc.notServed {
				if !strings.Contains(st.ExternalIPsNotServed[i], why) {
					t.Fatalf("not served %q, want %q at %d", st.ExternalIPsNotServed, why, i)
				}
			}
			if tc.served != "" && len(e.ingress(t)) != 0 {
				t.Fatalf("ingress %v: externalIPs are not published", e.ingress(t))
			}
			e.setSpec(t, func(_, _ *string, ips *[]string) { *ips = nil })
			e.converge(t)
			if n := len(e.fip.all); n != tc.keptAtEnd {
				t.Fatalf("%d floating IPs left, want %d: %v", n, tc.keptAtEnd, e.fip.all)
			}
			for _, f := range e.fip.all {
				if f.PortID != "" {
					t.Fatalf("floating IP %s still on port %s", f.Address, f.PortID)
				}
			}
		})
	}
}

// A candidate Neutron refuses to allocate does not take the VIP's floating
// IP away from the next one: it stays associated, reconcile after
// reconcile.
func TestExternalIPsStableWhenOneIsRefused(t *testing.T) {
	e := newEnv(t, "ClusterIP")
	e.fip.adminOnly = true
	e.userFIP("existing", "172.24.4.60", "")
	e.setSpec(t, func(_, _ *string, ips *[]string) { *ips = []string{"172.24.4.62", "172.24.4.60"} })
	e.converge(t)
	for i := 0; i < 4; i++ {
		if _, err := e.r.Reconcile(context.Background(), ctrl.Request{NamespacedName: types.NamespacedName{Namespace: "demo", Name: "web"}}); err != nil {
			t.Fatal(err)
		}
		st := e.klb(t).Status
		if f := e.fip.all["existing"]; f.PortID == "" || st.FloatingIP == nil || st.FloatingIP.ID != "existing" {
			t.Fatalf("reconcile %d: floating IP on port %q, status %+v: want the user's kept on the VIP", i, f.PortID, st.FloatingIP)
		}
	}
	if got := e.klb(t).Status.ExternalIPsNotServed; len(got) != 1 || !strings.Contains(got[0], "only admins") {
		t.Fatalf("not served %q", got)
	}
}
