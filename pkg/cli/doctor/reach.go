package doctor

import (
	"context"
	"net/netip"
	"slices"
	"strings"
	"time"

	"go4.org/netipx"

	"github.com/kuryr-k8s/kuryr/pkg/cli/env"
	"github.com/kuryr-k8s/kuryr/pkg/clusternet"
	"github.com/kuryr-k8s/kuryr/pkg/neutron"
)

// reach checks what pods no NetworkPolicy isolates admit, as the
// configuration and Neutron make it: every network on the cluster's
// router (the cloud's VMs, Use Case 1 of the design), and not the external
// network the floating IPs come from, so that loadBalancerSourceRanges
// mean something.
func reach(ctx context.Context, e *env.Env) []Finding {
	const c = "reachability"
	cloud, err := e.Cloud(ctx)
	if err != nil {
		return []Finding{fail(c, "not checked: no OpenStack connection")}
	}
	cfg, nc := cloud.Config, cloud.Neutron
	nd, np := cfg.NeutronDefaults, cfg.NetworkPolicy
	var unrestricted []string
	if np.Enabled {
		unrestricted = np.UnrestrictedIngress
	}
	var out []Finding
	if nd.ExternalSvcNet != "" {
		exposure, err := neutron.Exposure(ctx, nc, nd.PodSecurityGroups, unrestricted, nd.ExternalSvcNet)
		switch {
		case err != nil:
			out = append(out, warn(c, "not checked whether pods admit the external network: %v", err))
		case exposure != "":
			out = append(out, warn(c, "loadBalancerSourceRanges restrict nothing: %s", exposure))
		default:
			out = append(out, ok(c, "the external network reaches pods only through LoadBalancer Services (their source ranges hold)"))
		}
	}
	nets, err := clusterNetworks(ctx, cloud)
	if err != nil {
		return append(out, warn(c, "not checked the cluster's networks: %v", err))
	}
	admitted, err := admittedSources(ctx, cloud, nets)
	if err != nil {
		return append(out, warn(c, "not checked what pods admit: %v", err))
	}
	var cidrs []string
	for id, p := range nets.Subnets {
		if id != nd.ServiceSubnet {
			cidrs = append(cidrs, p.String())
		}
	}
	slices.Sort(cidrs)
	var shut []string
	for _, cidr := range cidrs {
		if p, err := netip.ParsePrefix(cidr); err == nil && !admitted.ContainsPrefix(p.Masked()) {
			shut = append(shut, cidr)
		}
	}
	if len(shut) > 0 {
		return append(out, warn(c, "VMs on %s (on the cluster's router) cannot open connections to pods no NetworkPolicy "+
			"isolates: widen [network_policy] unrestricted_ingress_cidrs (empty: the cluster's networks, the router's subnets) "+
			"or pod_security_groups", strings.Join(shut, ", ")))
	}
	return append(out, ok(c, "VMs on the %d networks of the cluster's router (%s) reach pods no NetworkPolicy isolates",
		len(cidrs), strings.Join(cidrs, ", ")))
}

// admittedSources are the addresses pods admit from whatever their
// policies: the pod_security_groups' ingress rules for any protocol, and
// with policies, the open-ingress group's sources (by default the
// cluster's networks).
func admittedSources(ctx context.Context, cloud *env.Cloud, nets clusternet.Networks) (*netipx.IPSet, error) {
	cfg, nc := cloud.Config, cloud.Neutron
	var b netipx.IPSetBuilder
	for _, id := range cfg.NeutronDefaults.PodSecurityGroups {
		sg, err := nc.GetSecurityGroup(ctx, id)
		if err != nil {
			return nil, err
		}
		for _, r := range sg.Rules {
			if r.Direction != "ingress" || r.Protocol != "" || r.RemoteGroup != "" || r.RemoteAddressGroup != "" {
				continue
			}
			addRemote(&b, r.RemotePrefix, r.EtherType)
		}
	}
	if np := cfg.NetworkPolicy; np.Enabled {
		sources := np.UnrestrictedIngress
		if len(sources) == 0 {
			sources = clusternet.Strings(nets.Prefixes())
		}
		for _, s := range sources {
			addRemote(&b, s, "")
		}
	}
	return b.IPSet()
}

func addRemote(b *netipx.IPSetBuilder, prefix, etherType string) {
	switch {
	case prefix != "":
		if p, err := netip.ParsePrefix(prefix); err == nil {
			b.AddPrefix(p.Masked())
		}
	case etherType == "IPv6":
		b.AddPrefix(netip.MustParsePrefix("::/0"))
	default:
		b.AddPrefix(netip.MustParsePrefix("0.0.0.0/0"))
	}
}

// clusterNetworks reads the cluster's networks as the controller does.
func clusterNetworks(ctx context.Context, cloud *env.Cloud) (clusternet.Networks, error) {
	cfg := cloud.Config
	nd := cfg.NeutronDefaults
	s := &clusternet.Source{Neutron: cloud.Neutron, Info: neutron.NewInfo(cloud.Neutron, time.Minute),
		Router: cfg.NamespaceSubnet.PodRouter, Subnets: []string{nd.PodSubnet, nd.ServiceSubnet, nd.NodeSubnet}}
	if pool := cfg.NamespaceSubnet.PodSubnetPool; pool != "" {
		s.Pools = []string{pool}
	}
	return s.Read(ctx)
}
