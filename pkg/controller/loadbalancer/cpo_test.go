package loadbalancer

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kuryrv1 "github.com/kuryr-k8s/kuryr/api/v1"
	"github.com/kuryr-k8s/kuryr/pkg/names"
)

func (e *env) setExternal(t *testing.T, ext *kuryrv1.ExternalSpec) {
	t.Helper()
	e.mutateSpec(t, func(s *kuryrv1.KuryrLoadBalancerSpec) { s.External = ext })
}

// cloud-provider-openstack's annotations, as the Service reconciler puts
// them in the spec: where the floating IP comes from, none at all, and
// whether it outlives the Service.
func TestCloudProviderExternal(t *testing.T) {
	for _, tc := range []struct {
		name            string
		ext             *kuryrv1.ExternalSpec
		network, subnet string // of the floating IP; "" network: none
		notServed       string
	}{
		{"default", nil, "public", "", ""},
		{"floating network", &kuryrv1.ExternalSpec{FloatingNetworkID: "ext2"}, "ext2", "", ""},
		{"floating subnet by id", &kuryrv1.ExternalSpec{FloatingNetworkID: "ext2", FloatingSubnetID: "ext2-b"}, "ext2", "ext2-b", ""},
		{"floating subnet by name", &kuryrv1.ExternalSpec{FloatingNetworkID: "ext2", FloatingSubnet: "b"}, "ext2", "ext2-b", ""},
		{"floating subnet by pattern", &kuryrv1.ExternalSpec{FloatingNetworkID: "ext2", FloatingSubnet: "!a"}, "ext2", "ext2-b", ""},
		{"floating subnet by tags", &kuryrv1.ExternalSpec{FloatingNetworkID: "ext2", FloatingSubnetTags: "red,blue"}, "ext2", "ext2-b", ""},
		{"first of those matching", &kuryrv1.ExternalSpec{FloatingNetworkID: "ext2", FloatingSubnet: "~[ab]"}, "ext2", "ext2-a", ""},
		{"pattern and tags", &kuryrv1.ExternalSpec{FloatingNetworkID: "ext2", FloatingSubnet: "a", FloatingSubnetTags: "blue"}, "", "",
			`a floating IP of network ext2: floating network ext2 has no subnet named "a" and tagged "blue"`},
		{"bad pattern", &kuryrv1.ExternalSpec{FloatingNetworkID: "ext2", FloatingSubnet: "~("}, "", "",
			"a floating IP of network ext2: floating subnet pattern \"~(\": error parsing regexp: missing closing ): `(`"},
		{"a listed subnet deleted since", &kuryrv1.ExternalSpec{FloatingNetworkID: "stale", FloatingSubnetTags: "blue"}, "stale", "stale-b", ""},
		{"subnet of the default network", &kuryrv1.ExternalSpec{FloatingSubnetID: "public-subnet"}, "public", "public-subnet", ""},
		{"no such subnet", &kuryrv1.ExternalSpec{FloatingNetworkID: "ext2", FloatingSubnet: "c"}, "", "",
			`a floating IP of network ext2: floating network ext2 has no subnet named "c"`},
		{"internal", &kuryrv1.ExternalSpec{Internal: true}, "", "", ""},
		{"unknown class", &kuryrv1.ExternalSpec{UnknownClass: "nope"}, "", "",
			`a floating IP of class "nope": kuryr.conf has no [LoadBalancerClass "nope"] section`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, "LoadBalancer")
			e.setExternal(t, tc.ext)
			e.converge(t)
			klb := e.klb(t)
			st, in := klb.Status.FloatingIP, e.ingress(t)
			if got := strings.Join(klb.Status.ExternalIPsNotServed, ";"); got != tc.notServed {
				t.Fatalf("not served %q, want %q", got, tc.notServed)
			}
			if tc.network == "" {
				if st != nil || len(e.fip.all) != 0 {
					t.Fatalf("floating IP %+v (all %v), want none", st, e.fip.all)
				}
				if internal(klb) && (len(in) != 1 || in[0].IP != klb.Spec.IP) {
					t.Fatalf("ingress %+v, want the VIP %s", in, klb.Spec.IP)
				}
				return
			}
			if st == nil || e.fip.all[st.ID].NetworkID != tc.network || e.fip.subnet[st.ID] != tc.subnet {
				t.Fatalf("floating IP %+v (%+v, subnet %q), want one of network %s subnet %q", st, e.fip.all, e.fip.subnet, tc.network, tc.subnet)
			}
			if len(in) != 1 || in[0].IP != st.IP {
				t.Fatalf("ingress %+v, want %s", in, st.IP)
			}
		})
	}
}

// A floating network or subnet changed: a floating IP of the new one
// replaces the old one, which goes.
func TestFloatingNetworkChanged(t *testing.T) {
	e := newEnv(t, "LoadBalancer")
	e.converge(t)
	old := e.klb(t).Status.FloatingIP
	for _, ext := range []*kuryrv1.ExternalSpec{{FloatingNetworkID: "ext2"}, {FloatingNetworkID: "ext2", FloatingSubnet: "b"}} {
		e.setExternal(t, ext)
		e.converge(t)
		st, cidr := e.klb(t).Status.FloatingIP, ""
		if ext.FloatingSubnet != "" {
			cidr = "172.24.5.0/24"
		}
		if st == nil || st.ID == old.ID || e.fip.all[st.ID].NetworkID != "ext2" || !within(st.IP, cidr) {
			t.Fatalf("%+v: floating IP %+v after the change, was %+v", ext, st, old)
		}
		if _, ok := e.fip.all[old.ID]; ok || len(e.fip.all) != 1 {
			t.Fatalf("%+v: floating IPs %v, want only the new one", ext, e.fip.all)
		}
		old = st
	}
}

// keep-floatingip on a Service that stops being a LoadBalancer (the spec
// keeps only that): its floating IP is the project's, not released.
func TestKeepFloatingIPTypeChanged(t *testing.T) {
	e := newEnv(t, "LoadBalancer")
	e.setExternal(t, &kuryrv1.ExternalSpec{KeepFloatingIP: true})
	e.converge(t)
	st := e.klb(t).Status.FloatingIP
	e.setType(t, "ClusterIP")
	e.converge(t)
	if f, ok := e.fip.all[st.ID]; !ok || f.PortID != "" || names.ServiceUIDOf(f.Tags) != "" {
		t.Fatalf("floating IP %+v (kept %v), want kept, disassociated, untagged", f, ok)
	}
}

// keep-floatingip: the floating IP kuryr allocated outlives the Service,
// the project's (kuryr's tags and description gone), disassociated; named
// in a new Service's loadBalancerIP it is that Service's address.
func TestKeepFloatingIP(t *testing.T) {
	e := newEnv(t, "LoadBalancer")
	e.setExternal(t, &kuryrv1.ExternalSpec{KeepFloatingIP: true})
	e.converge(t)
	st := e.klb(t).Status.FloatingIP
	if st == nil || st.AllocMethod != allocPool {
		t.Fatalf("floating IP %+v, want one kuryr allocated", st)
	}
	e.deleteKLB(t)
	f, ok := e.fip.all[st.ID]
	if !ok {
		t.Fatal("the floating IP was released")
	}
	if f.PortID != "" || f.Description != "" || names.ServiceUIDOf(f.Tags) != "" || strings.Contains(strings.Join(f.Tags, ","), names.ClusterTag("c1")) {
		t.Fatalf("kept floating IP %+v, want disassociated, untagged, undescribed", f)
	}
	e2 := newEnv(t, "LoadBalancer")
	e2.fip = e.fip
	e2.r.Neutron = e.fip
	e2.setSpec(t, func(_, lbIP *string, _ *[]string) { *lbIP = f.Address })
	e2.converge(t)
	if st2 := e2.klb(t).Status.FloatingIP; st2 == nil || st2.ID != f.ID || st2.AllocMethod != allocUser {
		t.Fatalf("floating IP of the new Service %+v, want the kept %s, the user's", st2, f.ID)
	}
}

// An internal load balancer's Service turned ClusterIP: the VIP kuryr
// published goes from its status.
func TestInternalNoLongerPublished(t *testing.T) {
	e := newEnv(t, "LoadBalancer")
	e.setExternal(t, &kuryrv1.ExternalSpec{Internal: true})
	e.converge(t)
	if in := e.ingress(t); len(in) != 1 {
		t.Fatalf("ingress %+v, want the VIP", in)
	}
	e.setType(t, "ClusterIP")
	e.converge(t)
	if in := e.ingress(t); len(in) != 0 {
		t.Fatalf("ingress %+v after the change to ClusterIP, want none", in)
	}
}

// A LoadBalancer Service of another class whose controller published the
// ClusterIP: kuryr (serving only its ClusterIP) leaves the status alone,
// also when its KuryrLoadBalancer goes (TestForeignIngressLeftAlone with
// the address kuryr would publish for an internal load balancer).
func TestForeignVIPIngressLeftAlone(t *testing.T) {
	e := newEnv(t, "ClusterIP")
	var svc corev1.Service
	if err := e.cl.Get(context.Background(), client.ObjectKey{Namespace: "demo", Name: "web"}, &svc); err != nil {
		t.Fatal(err)
	}
	svc.Spec.Type = corev1.ServiceTypeLoadBalancer
	if err := e.cl.Update(context.Background(), &svc); err != nil {
		t.Fatal(err)
	}
	svc.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: e.klb(t).Spec.IP}}
	if err := e.cl.Status().Update(context.Background(), &svc); err != nil {
		t.Fatal(err)
	}
	e.converge(t)
	if err := e.cl.Delete(context.Background(), e.klb(t)); err != nil {
		t.Fatal(err)
	}
	e.converge(t)
	if in := e.ingress(t); len(in) != 1 {
		t.Fatalf("ingress %+v, want the other controller's left in place", in)
	}
}

// A floating subnet named wrongly later: the floating IP the VIP carries
// stays (a Warning says why) instead of the Service losing its address.
func TestBadSubnetKeepsTheAddress(t *testing.T) {
	e := newEnv(t, "LoadBalancer")
	e.setExternal(t, &kuryrv1.ExternalSpec{FloatingNetworkID: "ext2"})
	e.converge(t)
	st := e.klb(t).Status.FloatingIP
	e.setExternal(t, &kuryrv1.ExternalSpec{FloatingNetworkID: "ext2", FloatingSubnet: "typo"})
	e.converge(t)
	if now := e.klb(t).Status.FloatingIP; now == nil || now.ID != st.ID || e.fip.all[st.ID] == nil {
		t.Fatalf("floating IP %+v after the bad subnet, want %+v kept", now, st)
	}
}

// A class kuryr.conf does not have (a typo in the annotation, a section
// not yet added): the floating IP the VIP carries stays, whatever its
// network, and nothing is allocated.
func TestUnknownClassKeepsTheAddress(t *testing.T) {
	e := newEnv(t, "LoadBalancer")
	e.setExternal(t, &kuryrv1.ExternalSpec{FloatingNetworkID: "ext2"})
	e.converge(t)
	st := e.klb(t).Status.FloatingIP
	e.setExternal(t, &kuryrv1.ExternalSpec{UnknownClass: "typo"})
	e.converge(t)
	if now := e.klb(t).Status.FloatingIP; now == nil || now.ID != st.ID || len(e.fip.all) != 1 {
		t.Fatalf("floating IP %+v (all %v) with an unknown class, want %+v kept alone", now, e.fip.all, st)
	}
	if in := e.ingress(t); len(in) != 1 || in[0].IP != st.IP {
		t.Fatalf("ingress %+v, want %s still published", in, st.IP)
	}
}

// An unknown class releases nothing: a floating IP on the VIP that is not
// kuryr's (the user's former loadBalancerIP) stays associated.
func TestUnknownClassDisassociatesNothing(t *testing.T) {
	e := newEnv(t, "LoadBalancer")
	e.userFIP("named", "172.24.4.50", "")
	e.setSpec(t, func(_, lbIP *string, _ *[]string) { *lbIP = "172.24.4.50" })
	e.converge(t)
	vip := e.fip.all["named"].PortID
	e.mutateSpec(t, func(s *kuryrv1.KuryrLoadBalancerSpec) {
		s.LoadBalancerIP, s.External = "", &kuryrv1.ExternalSpec{UnknownClass: "typo"}
	})
	e.converge(t)
	if f := e.fip.all["named"]; f == nil || vip == "" || f.PortID != vip || len(e.fip.all) != 1 {
		t.Fatalf("floating IPs %v with an unknown class, want the user's alone, still on the VIP %q", e.fip.all, vip)
	}
}

// keep-floatingip keeps the floating IP the Service used, not a stray of
// an unanswered create (one the user never saw): that one is deleted.
func TestKeepFloatingIPDeletesStrays(t *testing.T) {
	e := newEnv(t, "LoadBalancer")
	e.setExternal(t, &kuryrv1.ExternalSpec{KeepFloatingIP: true})
	e.converge(t)
	e.userFIP("stray", "172.24.4.250", fipDescription(svcUID))
	e.deleteKLB(t)
	if _, ok := e.fip.all["stray"]; ok {
		t.Fatal("the stray floating IP was kept")
	}
	if len(e.fip.all) != 1 {
		t.Fatalf("floating IPs %v, want the used one kept", e.fip.all)
	}
}

// A floating IP the Service has in any subnet its pattern matches is kept,
// not only in the first one, where a new one would be allocated.
func TestFloatingIPInAnyMatchingSubnetKept(t *testing.T) {
	e := newEnv(t, "LoadBalancer")
	e.setExternal(t, &kuryrv1.ExternalSpec{FloatingNetworkID: "ext2", FloatingSubnet: "b"})
	e.converge(t)
	before := e.klb(t).Status.FloatingIP
	e.setExternal(t, &kuryrv1.ExternalSpec{FloatingNetworkID: "ext2", FloatingSubnet: "~[ab]"})
	e.converge(t)
	if after := e.klb(t).Status.FloatingIP; after == nil || after.ID != before.ID || len(e.fip.all) != 1 {
		t.Fatalf("floating IP %+v after the pattern, was %+v (all %v): want it kept", after, before, e.fip.all)
	}
}

// Where a LoadBalancer Service's floating IP comes from: external_svc_subnet
// only when the Service chooses neither the network nor a subnet.
func TestCandidateSubnet(t *testing.T) {
	s := Settings{ExternalNetwork: "public", ExternalSubnet: "public-subnet"}
	for _, tc := range []struct {
		name             string
		ext              *kuryrv1.ExternalSpec
		network, subnet  string
		pattern, tagSpec string
	}{
		{"default", nil, "public", "public-subnet", "", ""},
		{"subnet id", &kuryrv1.ExternalSpec{FloatingSubnetID: "s"}, "public", "s", "", ""},
		{"pattern", &kuryrv1.ExternalSpec{FloatingSubnet: "p*"}, "public", "", "p*", ""},
		{"tags", &kuryrv1.ExternalSpec{FloatingSubnetTags: "t"}, "public", "", "", "t"},
		{"network", &kuryrv1.ExternalSpec{FloatingNetworkID: "ext2"}, "ext2", "", "", ""},
		{"network and tags", &kuryrv1.ExternalSpec{FloatingNetworkID: "ext2", FloatingSubnetTags: "t"}, "ext2", "", "", "t"},
	} {
		spec := kuryrv1.KuryrLoadBalancerSpec{Type: "LoadBalancer", External: tc.ext}
		got := candidates(spec, s)
		if len(got) != 1 {
			t.Fatalf("%s: %d candidates", tc.name, len(got))
		}
		c := got[0]
		if c.network != tc.network || c.subnet != tc.subnet || c.subnetPattern != tc.pattern || c.subnetTags != tc.tagSpec || !c.allocate {
			t.Errorf("%s: %+v, want network %s subnet %q pattern %q tags %q", tc.name, c, tc.network, tc.subnet, tc.pattern, tc.tagSpec)
		}
	}
}
