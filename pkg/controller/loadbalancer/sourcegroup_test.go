package loadbalancer

import (
	"net/netip"
	"reflect"
	"sort"
	"testing"

	kuryrv1 "github.com/kuryr-k8s/kuryr/api/v1"
	"github.com/kuryr-k8s/kuryr/pkg/neutron"
)

func TestSourceRules(t *testing.T) {
	ports := []kuryrv1.LoadBalancerPort{
		{Protocol: "TCP", Port: 80, Members: []kuryrv1.LoadBalancerMember{{IP: "10.10.0.5", Port: 8080}, {IP: "10.10.0.6", Port: 8080}}},
		{Protocol: "UDP", Port: 53, Members: []kuryrv1.LoadBalancerMember{{IP: "10.10.0.5", Port: 5353}}},
	}
	in := func(proto string, port int, prefix, eth string) neutron.Rule {
		return neutron.Rule{Direction: "ingress", EtherType: eth, Protocol: proto, PortMin: port, PortMax: port, RemotePrefix: prefix}
	}
	for _, tc := range []struct {
		name     string
		spec     kuryrv1.KuryrLoadBalancerSpec
		want     []neutron.Rule
		internal []netip.Prefix
	}{
		{"ClusterIP: none", kuryrv1.KuryrLoadBalancerSpec{Type: "ClusterIP", Ports: ports}, nil, nil},
		{"no ranges: everyone, both families", kuryrv1.KuryrLoadBalancerSpec{Type: "LoadBalancer", Ports: ports}, []neutron.Rule{
			in("tcp", 8080, "0.0.0.0/0", "IPv4"), in("tcp", 8080, "::/0", "IPv6"),
			in("udp", 5353, "0.0.0.0/0", "IPv4"), in("udp", 5353, "::/0", "IPv6")}, nil},
		{"ranges normalized, bad one skipped", kuryrv1.KuryrLoadBalancerSpec{Type: "LoadBalancer", Ports: ports[:1],
			SourceRanges: []string{" 172.24.4.7/24", "nonsense", "2001:db8::1/64"}}, []neutron.Rule{
			in("tcp", 8080, "172.24.4.0/24", "IPv4"), in("tcp", 8080, "2001:db8::/64", "IPv6")}, nil},
		{"internal networks cut out of the ranges", kuryrv1.KuryrLoadBalancerSpec{Type: "LoadBalancer", Ports: ports[:1],
			SourceRanges: []string{"10.0.0.0/8"}}, []neutron.Rule{
			in("tcp", 8080, "10.0.0.0/13", "IPv4"), in("tcp", 8080, "10.8.0.0/15", "IPv4"), in("tcp", 8080, "10.12.0.0/14", "IPv4"),
			in("tcp", 8080, "10.16.0.0/12", "IPv4"), in("tcp", 8080, "10.32.0.0/11", "IPv4"),
			in("tcp", 8080, "10.64.0.0/10", "IPv4"), in("tcp", 8080, "10.128.0.0/9", "IPv4")},
			[]netip.Prefix{netip.MustParsePrefix("10.10.0.0/16"), netip.MustParsePrefix("10.11.0.0/16")}},
		{"no members: no rules", kuryrv1.KuryrLoadBalancerSpec{Type: "LoadBalancer",
			Ports: []kuryrv1.LoadBalancerPort{{Protocol: "SCTP", Port: 9}}}, []neutron.Rule{}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := sourceRules(&kuryrv1.KuryrLoadBalancer{Spec: tc.spec}, tc.internal)
			if tc.want == nil && got != nil || tc.want != nil && !reflect.DeepEqual(got, sortedRules(tc.want)) {
				t.Fatalf("got %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func sortedRules(rs []neutron.Rule) []neutron.Rule {
	out := append([]neutron.Rule{}, rs...)
	sort.Slice(out, func(i, j int) bool { return out[i].Key() < out[j].Key() })
	return out
}

func TestDiffRules(t *testing.T) {
	a := neutron.Rule{Direction: "ingress", EtherType: "IPv4", Protocol: "tcp", PortMin: 80, PortMax: 80, RemotePrefix: "0.0.0.0/0"}
	b := a
	b.RemotePrefix = "172.24.4.0/24"
	have := []neutron.Rule{
		{ID: "egress", Direction: "egress", EtherType: "IPv4"},
		withID(a, "a1"), withID(a, "a2"), // a duplicate goes
		withID(b, "b1"),
	}
	add, del := neutron.DiffRules([]neutron.Rule{a, func() neutron.Rule { c := a; c.Protocol = "udp"; return c }()}, have, "ingress")
	if len(add) != 1 || add[0].Protocol != "udp" {
		t.Errorf("add %+v, want the udp rule", add)
	}
	if !reflect.DeepEqual(del, []string{"a2", "b1"}) {
		t.Errorf("delete %v, want [a2 b1]", del)
	}
}

func withID(r neutron.Rule, id string) neutron.Rule { r.ID = id; return r }
