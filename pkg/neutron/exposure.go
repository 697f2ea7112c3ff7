package neutron

import (
	"context"
	"fmt"
	"net/netip"
)

// exposureReader is what Exposure reads of Neutron.
type exposureReader interface {
	NetworkPrefixes(ctx context.Context, id string) ([]netip.Prefix, error)
	GetSecurityGroup(ctx context.Context, id string) (*SecurityGroup, error)
}

// Exposure says how pods admit the external network the floating IPs are
// on ("" when they do not): through their own security groups, or through
// the open-ingress group of pods no policy isolates (unrestricted, the
// [network_policy] unrestricted_ingress_cidrs set by the operator). Then a
// LoadBalancer Service's loadBalancerSourceRanges restrict nothing, since
// every source is let in anyway, and the Service gets a Warning saying so.
func Exposure(ctx context.Context, n exposureReader, podGroups, unrestricted []string, externalNet string) (string, error) {
	if externalNet == "" {
		return "", nil
	}
	external, err := n.NetworkPrefixes(ctx, externalNet)
	if err != nil {
		return "", err
	}
	for _, c := range unrestricted {
		if p, err := netip.ParsePrefix(c); err == nil && overlapsAny(p, external) {
			return fmt.Sprintf("[network_policy] unrestricted_ingress_cidrs %s admits the external network to pods no policy isolates", c), nil
		}
	}
	for _, id := range podGroups {
		sg, err := n.GetSecurityGroup(ctx, id)
		if err != nil {
			return "", err
		}
		if r, ok := admits(sg.Rules, external); ok {
			return fmt.Sprintf("pod_security_groups %s admits %s from %s", id, ruleText(r), prefixText(r)), nil
		}
	}
	return "", nil
}

func overlapsAny(p netip.Prefix, ps []netip.Prefix) bool {
	for _, q := range ps {
		if p.Overlaps(q) {
			return true
		}
	}
	return false
}

// admits returns an ingress rule that lets addresses of external in. Pure.
func admits(rules []Rule, external []netip.Prefix) (Rule, bool) {
	for _, r := range rules {
		if r.Direction != "ingress" || r.RemoteGroup != "" || r.RemoteAddressGroup != "" {
			continue
		}
		if r.RemotePrefix == "" {
			return r, true // every address of its family
		}
		if p, err := netip.ParsePrefix(r.RemotePrefix); err == nil && overlapsAny(p, external) {
			return r, true
		}
	}
	return Rule{}, false
}

func ruleText(r Rule) string {
	proto := r.Protocol
	if proto == "" {
		proto = "every protocol"
	}
	if r.PortMin == 0 {
		return proto
	}
	return fmt.Sprintf("%s %d-%d", proto, r.PortMin, r.PortMax)
}

func prefixText(r Rule) string {
	if r.RemotePrefix == "" {
		return "anywhere (" + r.EtherType + ")"
	}
	return r.RemotePrefix
}
