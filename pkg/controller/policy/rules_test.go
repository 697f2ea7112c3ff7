package policy

import (
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
	rules, missing := GroupRules(spec, map[string]string{"p1": "sg-1"}, false)
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
