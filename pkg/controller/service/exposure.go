package service

import (
	"context"
	"fmt"
	"net/netip"

	"github.com/kuryr-k8s/kuryr/pkg/neutron"
)

// exposureReader is what Exposure reads of Neutron.
type exposureReader interface {
	GetNetwork(ctx context.Context, id string) (*neutron.Network, error)
	GetSubnet(ctx context.Context, id string) (*neutron.Subnet, error)
	GetSecurityGroup(ctx context.Context, id string) (*neutron.SecurityGroup, error)
}

// Exposure says how the pods' own security groups admit the external
// network the floating IPs are on ("" when they do not): then a
// LoadBalancer Service's loadBalancerSourceRanges restrict nothing, since
// every source is let in anyway, and the Service gets a Warning saying so.
func Exposure(ctx context.Context, n exposureReader, podGroups []string, externalNet string) (string, error) {
	if externalNet == "" {
		return "", nil
	}
	net, err := n.GetNetwork(ctx, externalNet)
	if err != nil {
		return "", err
	}
	var external []netip.Prefix
	for _, id := range net.Subnets {
		s, err := n.GetSubnet(ctx, id)
		if err != nil {
			return "", err
		}
		if p, err := netip.ParsePrefix(s.CIDR); err == nil {
			external = append(external, p.Masked())
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

// admits returns an ingress rule that lets addresses of external in. Pure.
func admits(rules []neutron.Rule, external []netip.Prefix) (neutron.Rule, bool) {
	for _, r := range rules {
		if r.Direction != "ingress" || r.RemoteGroup != "" || r.RemoteAddressGroup != "" {
			continue
		}
		if r.RemotePrefix == "" {
			return r, true // every address of its family
		}
		p, err := netip.ParsePrefix(r.RemotePrefix)
		if err != nil {
			continue
		}
		for _, e := range external {
			if p.Overlaps(e) {
				return r, true
			}
		}
	}
	return neutron.Rule{}, false
}

func ruleText(r neutron.Rule) string {
	proto := r.Protocol
	if proto == "" {
		proto = "every protocol"
	}
	if r.PortMin == 0 {
		return proto
	}
	return fmt.Sprintf("%s %d-%d", proto, r.PortMin, r.PortMax)
}

func prefixText(r neutron.Rule) string {
	if r.RemotePrefix == "" {
		return "anywhere (" + r.EtherType + ")"
	}
	return r.RemotePrefix
}
