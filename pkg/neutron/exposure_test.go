package neutron

import (
	"net/netip"
	"testing"
)

func TestAdmits(t *testing.T) {
	external := []netip.Prefix{netip.MustParsePrefix("172.24.4.0/24")}
	in := func(prefix, group string) Rule {
		return Rule{Direction: "ingress", EtherType: "IPv4", RemotePrefix: prefix, RemoteGroup: group}
	}
	for _, tc := range []struct {
		name  string
		rules []Rule
		want  bool
	}{
		{"the local cloud's: cluster subnets only", []Rule{in("10.10.0.0/16", ""), in("10.96.0.0/16", ""),
			{Direction: "egress", EtherType: "IPv4"}}, false},
		{"open to everyone", []Rule{in("", "")}, true},
		{"a remote group only", []Rule{in("", "sg-1")}, false},
		{"a prefix covering the external network", []Rule{in("172.16.0.0/12", "")}, true},
		{"a host inside it", []Rule{in("172.24.4.7/32", "")}, true},
		{"a bad prefix is skipped", []Rule{in("nonsense", "")}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, got := admits(tc.rules, external); got != tc.want {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
		})
	}
}
