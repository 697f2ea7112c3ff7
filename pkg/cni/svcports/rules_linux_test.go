package svcports

import (
	"fmt"
	"reflect"
	"testing"

	"github.com/google/nftables"
	"github.com/google/nftables/expr"
	"github.com/kuryr-k8s/kuryr/pkg/names"
)

// shape describes a program per chain: for each rule, its numgen modulus
// ("n3"), or "drop", "goto <chain>", "masq" or "dnat".
func shape(p program) map[string][]string {
	out := map[string][]string{}
	for _, c := range p.chains {
		out[c.Name] = nil
	}
	for _, r := range p.rules {
		var s string
		for _, e := range r.Exprs {
			switch e := e.(type) {
			case *expr.Numgen:
				s += fmt.Sprintf("n%d ", e.Modulus)
			case *expr.Verdict:
				switch e.Kind {
				case expr.VerdictDrop:
					s += "drop"
				case expr.VerdictGoto:
					s += "goto " + e.Chain
				}
			case *expr.Masq:
				s += "masq"
			case *expr.NAT:
				s += "dnat"
			}
		}
		out[r.Chain.Name] = append(out[r.Chain.Name], s)
	}
	return out
}

func TestBuild(t *testing.T) {
	for _, tc := range []struct {
		name string
		rs   Ruleset
		want map[string][]string
	}{
		{"nothing: the base chains and the masquerade rule", Ruleset{},
			map[string][]string{"prerouting": nil, "output": nil, "postrouting": {"masq"}}},
		{"cluster", Ruleset{Ports: []NodePort{tcpPort(30080, "10.96.0.20:80", false)}},
			map[string][]string{"prerouting": {"dnat"}, "output": {"dnat"}, "postrouting": {"masq"}}},
		{"local without endpoints: drop; the node's own traffic to the ClusterIP",
			Ruleset{Ports: []NodePort{tcpPort(30080, "10.96.0.20:80", true)}},
			map[string][]string{"prerouting": {"goto local-tcp-30080"}, "output": {"dnat"}, "postrouting": {"masq"},
				"local-tcp-30080": {"drop"}}},
		{"local with three endpoints: 1/3, then 1/2, then the last",
			Ruleset{Ports: []NodePort{tcpPort(30080, "10.96.0.20:80", true, "10.10.0.5:8080", "10.10.0.6:8080", "10.10.0.7:8080")}},
			map[string][]string{"prerouting": {"goto local-tcp-30080"}, "output": {"dnat"}, "postrouting": {"masq"},
				"local-tcp-30080": {"n3 dnat", "n2 dnat", "dnat"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := shape(build(&nftables.Table{Name: names.NodePortsTable, Family: nftables.TableFamilyINet}, tc.rs))
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %v\nwant %v", got, tc.want)
			}
		})
	}
	if MasqueradeMark&0xffff != 0 {
		t.Errorf("MasqueradeMark %#x is in the low 16 bits (kube-proxy's 0x4000 and operators' marks)", MasqueradeMark)
	}
}
