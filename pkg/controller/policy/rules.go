package policy

import (
	"net/netip"
	"sort"

	kuryrv1 "github.com/kuryr-k8s/kuryr/api/v1"
	"github.com/kuryr-k8s/kuryr/pkg/neutron"
)

// GroupRules are the Neutron rules of a policy's security group: a CIDR
// rule in its family, a peer rule once per family naming the peer's group
// as its remote group (its address group with addressGroups). Peers whose
// group is not known yet are returned in missing and their rules left out
// (a rule less denies, never opens). Pure.
func GroupRules(spec kuryrv1.KuryrNetworkPolicySpec, peerGroups map[string]string, addressGroups bool) (rules []neutron.Rule, missing []string) {
	seen := map[string]bool{}
	add := func(r neutron.Rule) {
		if !seen[r.Key()] {
			seen[r.Key()] = true
			rules = append(rules, r)
		}
	}
	lacking := map[string]bool{}
	for _, pr := range spec.Rules {
		r := neutron.Rule{Direction: pr.Direction, Protocol: pr.Protocol, PortMin: pr.PortMin, PortMax: pr.PortMax}
		switch {
		case pr.Peer != "":
			g, ok := peerGroups[pr.Peer]
			if !ok {
				lacking[pr.Peer] = true
				continue
			}
			if addressGroups {
				r.RemoteAddressGroup = g
			} else {
				r.RemoteGroup = g
			}
			for _, eth := range []string{"IPv4", "IPv6"} {
				r.EtherType = eth
				add(r)
			}
		default:
			p, err := netip.ParsePrefix(pr.CIDR)
			if err != nil {
				continue // the translation only writes valid prefixes
			}
			r.RemotePrefix, r.EtherType = p.Masked().String(), "IPv4"
			if p.Addr().Is6() {
				r.EtherType = "IPv6"
			}
			add(r)
		}
	}
	sort.Slice(rules, func(i, j int) bool { return rules[i].Key() < rules[j].Key() })
	return rules, sortedKeys(lacking)
}
