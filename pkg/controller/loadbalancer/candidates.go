package loadbalancer

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	kuryrv1 "github.com/kuryr-k8s/kuryr/api/v1"
	"github.com/kuryr-k8s/kuryr/pkg/neutron"
)

// candidate is an external address a Service asks for, in the order the
// Service gives them: its VIP carries the first that can be served.
type candidate struct {
	// addr is the address ("": any address of the external network).
	addr string
	// allocate: kuryr may allocate addr on the external network when no
	// floating IP has it yet.
	allocate bool
	// userOwned: the user named addr in loadBalancerIP; it is theirs,
	// whoever allocated it.
	userOwned bool
	// network, subnet, subnetPattern and subnetTags say where any address
	// (addr "") is allocated: the Service's floating network and subnet (by
	// id, else the first matching the pattern and tags: subnetMatch), else
	// external_svc_net and external_svc_subnet; cidrs are those of every
	// subnet it names, once resolved (a floating IP in any of them is
	// what c asks for).
	network, subnet, subnetPattern, subnetTags string
	cidrs                                      []string
	// unknownClass is the class the Service names that kuryr.conf does not
	// have: c cannot be resolved, and the floating IP kuryr allocated for
	// the Service that the VIP carries, on any network, stays.
	unknownClass string
}

// label names c in a message.
func (c candidate) label() string {
	if c.unknownClass != "" {
		return "a floating IP of class " + strconv.Quote(c.unknownClass)
	}
	if c.addr == "" {
		return "a floating IP of network " + c.network
	}
	return c.addr
}

// matches says whether the floating IP f is what c asks for: for any
// address, one kuryr allocated for the Service on c's network.
func (c candidate) matches(f neutron.FloatingIP, uid string) bool {
	if c.addr == "" {
		return ours(f, uid) && (f.NetworkID == "" || c.unknownClass != "" || f.NetworkID == c.network) &&
			(len(c.cidrs) == 0 || slices.ContainsFunc(c.cidrs, func(cidr string) bool { return within(f.Address, cidr) }))
	}
	return f.Address == c.addr
}

// within reports whether addr is in cidr ("": anywhere).
func within(addr, cidr string) bool {
	if cidr == "" {
		return true
	}
	p, err := netip.ParsePrefix(cidr)
	a, aerr := netip.ParseAddr(addr)
	return err == nil && aerr == nil && p.Contains(a)
}

// candidates are the external addresses of a spec: a LoadBalancer
// Service's address (none when it asks for an internal load balancer;
// loadBalancerIP, else one allocated on its floating network or the
// external network), else each of its externalIPs (which kuryr may
// allocate with that address on the external network). Pure.
func candidates(spec kuryrv1.KuryrLoadBalancerSpec, s Settings) []candidate {
	if spec.Type == string(corev1.ServiceTypeLoadBalancer) {
		ext := spec.External
		if ext == nil {
			ext = &kuryrv1.ExternalSpec{}
		}
		switch {
		case ext.Internal:
			return nil
		case spec.LoadBalancerIP != "":
			return []candidate{{addr: spec.LoadBalancerIP, userOwned: true}}
		case ext.UnknownClass != "":
			return []candidate{{unknownClass: ext.UnknownClass}}
		case ext.FloatingNetworkID != "" || s.ExternalNetwork != "":
			c := candidate{allocate: true, network: ext.FloatingNetworkID, subnet: ext.FloatingSubnetID,
				subnetPattern: ext.FloatingSubnet, subnetTags: ext.FloatingSubnetTags}
			if c.network == "" {
				c.network = s.ExternalNetwork
				if c.subnet == "" && !c.byMatch() {
					c.subnet = s.ExternalSubnet
				}
			}
			return []candidate{c}
		}
		return nil
	}
	var out []candidate
	for _, a := range spec.ExternalIPs {
		out = append(out, candidate{addr: a, allocate: s.ExternalNetwork != ""})
	}
	return out
}

// byMatch: c's subnet is the first its pattern and tags match (no id).
func (c candidate) byMatch() bool {
	return c.subnet == "" && (c.subnetPattern != "" || c.subnetTags != "")
}

// resolve finds the subnet c allocates any address on (c's subnet, or the
// first subnet of c's network its pattern and tags match) and the CIDRs
// of those it names; why says what is wrong with them.
func (r *Reconciler) resolve(ctx context.Context, c candidate) (candidate, string, error) {
	if c.byMatch() {
		subs, why, err := r.subnetsMatching(ctx, c)
		if err != nil || why != "" {
			return c, why, err
		}
		c.subnet = subs[0].ID
		for _, s := range subs {
			c.cidrs = append(c.cidrs, s.CIDR)
		}
		return c, "", nil
	}
	id := c.subnet
	if id == "" {
		return c, "", nil
	}
	sub, err := r.Info.Subnet(ctx, id)
	switch {
	case neutron.IsNotFound(err):
		return c, "floating subnet " + id + " not found", nil
	case err != nil:
		return c, "", err
	case sub.NetworkID != "" && sub.NetworkID != c.network:
		return c, fmt.Sprintf("subnet %s is not on floating network %s", id, c.network), nil
	}
	c.cidrs = []string{sub.CIDR}
	return c, "", nil
}

// subnetsMatching are the subnets of c's network that c's pattern and tags
// match, in the network's order; a subnet added since the network was
// cached is found too.
func (r *Reconciler) subnetsMatching(ctx context.Context, c candidate) ([]neutron.Subnet, string, error) {
	match, err := neutron.SubnetMatch(c.subnetPattern, c.subnetTags)
	if err != nil {
		return nil, err.Error(), nil
	}
	for fresh := false; ; fresh = true {
		if fresh {
			r.Info.ForgetNetwork(c.network)
		}
		net, err := r.Info.Network(ctx, c.network)
		if neutron.IsNotFound(err) {
			return nil, "floating network " + c.network + " not found", nil
		}
		if err != nil {
			return nil, "", err
		}
		var out []neutron.Subnet
		for _, id := range net.Subnets {
			sub, err := r.Info.Subnet(ctx, id)
			if neutron.IsNotFound(err) {
				continue // deleted since the network was read
			}
			if err != nil {
				return nil, "", err
			}
			if match(*sub) {
				out = append(out, *sub)
			}
		}
		if len(out) > 0 {
			return out, "", nil
		}
		if fresh {
			return nil, fmt.Sprintf("floating network %s has no subnet %s", c.network, c.subnetLabel()), nil
		}
	}
}

// subnetLabel names the subnets c's pattern and tags choose in a message.
func (c candidate) subnetLabel() string {
	var parts []string
	if c.subnetPattern != "" {
		parts = append(parts, "named "+strconv.Quote(c.subnetPattern))
	}
	if c.subnetTags != "" {
		parts = append(parts, "tagged "+strconv.Quote(c.subnetTags))
	}
	return strings.Join(parts, " and ")
}

// externalSubnetOf finds the subnet of the external network that holds
// addr (external_svc_subnet when it is set), or says why there is none.
func (r *Reconciler) externalSubnetOf(ctx context.Context, addr string) (string, string, error) {
	ip, err := netip.ParseAddr(addr)
	if err != nil {
		return "", "not an IP address", nil
	}
	net, err := r.Info.Network(ctx, r.Settings.ExternalNetwork)
	if err != nil {
		return "", "", err
	}
	var cidrs []string
	for _, id := range net.Subnets {
		if r.Settings.ExternalSubnet != "" && id != r.Settings.ExternalSubnet {
			continue
		}
		s, err := r.Info.Subnet(ctx, id)
		if err != nil {
			return "", "", err
		}
		cidrs = append(cidrs, s.CIDR)
		if p, err := netip.ParsePrefix(s.CIDR); err == nil && p.Contains(ip) {
			return id, "", nil
		}
	}
	return "", fmt.Sprintf("neither a floating IP of the project nor an address of external_svc_net %s (%s)",
		r.Settings.ExternalNetwork, strings.Join(cidrs, ", ")), nil
}

// refusedAllocation says why Neutron refused to allocate addr, when that
// is a refusal no retry fixes ("" otherwise).
func refusedAllocation(addr, network string, err error) string {
	switch {
	case err == nil || addr == "":
		return ""
	case neutron.Forbidden(err):
		return fmt.Sprintf("Neutron's policy lets only admins choose a floating IP's address "+
			"(create_floatingip:floating_ip_address); allocate it in the project yourself: "+
			"openstack floating ip create --floating-ip-address %s %s", addr, network)
	case neutron.InUse(err):
		return "allocated already, to a project kuryr cannot see"
	case neutron.BadRequest(err):
		return "Neutron refused it: " + err.Error()
	}
	return ""
}
