package policy

import (
	"net/netip"
	"reflect"
	"testing"

	kuryrv1 "github.com/kuryr-k8s/kuryr/api/v1"
)

func TestGroupRules(t *testing.T) {
	spec := kuryrv1.KuryrNetworkPolicySpec{Rules: []kuryrv1.PolicyRule{
		{Direction: "ingress", Protocol: "tcp", PortMin: 80, PortMax: 80, Peer: "p1"},
		{Direction: "ingress", Protocol: "tcp", PortMin: 80, PortMax: 80, Peer: "p2"},
		{Direction: "egress", CIDR: "10.0.0.0/24"},
		{Direction: "egress", CIDR: "::/0"},
	}}
	rules, missing := GroupRules(spec, map[string]string{"p1": "sg-1"})
	if !reflect.DeepEqual(missing, []string{"p2"}) {
		t.Errorf("missing %v, want [p2]", missing)
	}
	got := map[string]bool{}
	for _, r := range rules {
		got[r.Key()] = true
	}
	if len(rules) != 4 || !got["egress/IPv4//0-0/10.0.0.0/24//"] || !got["egress/IPv6//0-0/::/0//"] ||
		!got["ingress/IPv4/tcp/80-80//sg-1/"] || !got["ingress/IPv6/tcp/80-80//sg-1/"] {
		t.Errorf("rules %v", got)
	}
}

func TestOutside(t *testing.T) {
	got := Outside([]netip.Prefix{netip.MustParsePrefix("172.24.4.0/24")})
	for _, in := range []string{"10.20.0.5", "10.10.0.7", "8.8.8.8", "172.24.5.1", "fd00::1"} {
		if !containsAddr(got, in) {
			t.Errorf("%s not admitted by %v", in, got)
		}
	}
	for _, out := range []string{"172.24.4.1", "172.24.4.250"} {
		if containsAddr(got, out) {
			t.Errorf("%s of the external network admitted by %v", out, got)
		}
	}
	if got := Outside(nil); len(got) != 2 || got[0] != "0.0.0.0/0" || got[1] != "::/0" {
		t.Errorf("nothing excluded: %v", got)
	}
}

func containsAddr(cidrs []string, a string) bool {
	ip := netip.MustParseAddr(a)
	for _, c := range cidrs {
		if netip.MustParsePrefix(c).Contains(ip) {
			return true
		}
	}
	return false
}
