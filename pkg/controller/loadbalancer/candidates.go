package loadbalancer

import (
	"context"
	"fmt"
	"net/netip"
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
	// network, subnet and subnetName say where any address (addr "") is
	// allocated: the Service's floating network and subnet (by id, or by
	// name), else external_svc_net and external_svc_subnet; cidr is the
	// subnet's, once resolved.
	network, subnet, subnetName, cidr string
}

// label names c in a message.
func (c candidate) label() string {
	if c.addr == "" {
		return "a floating IP of network " + c.network
	}
	return c.addr
}

// matches says whether the floating IP f is what c asks for: for any
// address, one kuryr allocated for the Service on c's network.
func (c candidate) matches(f neutron.FloatingIP, uid string) bool {
	if c.addr == "" {
		return ours(f, uid) && (f.NetworkID == "" || f.NetworkID == c.network) && within(f.Address, c.cidr)
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
		case ext.FloatingNetworkID != "":
			return []candidate{{allocate: true, network: ext.FloatingNetworkID, subnet: ext.FloatingSubnetID, subnetName: ext.FloatingSubnet}}
		case s.ExternalNetwork != "":
			c := candidate{allocate: true, network: s.ExternalNetwork, subnet: ext.FloatingSubnetID, subnetName: ext.FloatingSubnet}
			if c.subnet == "" && c.subnetName == "" {
				c.subnet = s.ExternalSubnet
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

// resolve finds the subnet c allocates any address on (c's subnet, or the
// subnet of c's network with c's subnet name) and its CIDR; why says what
// is wrong with it.
func (r *Reconciler) resolve(ctx context.Context, c candidate) (candidate, string, error) {
	id, why, err := c.subnet, "", error(nil)
	if c.subnetName != "" {
		id, why, err = r.subnetNamed(ctx, c.network, c.subnetName)
	}
	if err != nil || why != "" || id == "" {
		return c, why, err
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
	c.subnet, c.cidr = id, sub.CIDR
	return c, "", nil
}

// subnetNamed is the subnet of network with that name; a subnet added
// since the network was cached is found too.
func (r *Reconciler) subnetNamed(ctx context.Context, network, name string) (string, string, error) {
	for fresh := false; ; fresh = true {
		if fresh {
			r.Info.ForgetNetwork(network)
		}
		net, err := r.Info.Network(ctx, network)
		if neutron.IsNotFound(err) {
			return "", "floating network " + network + " not found", nil
		}
		if err != nil {
			return "", "", err
		}
		for _, id := range net.Subnets {
			sub, err := r.Info.Subnet(ctx, id)
			if err != nil {
				return "", "", err
			}
			if sub.Name == name {
				return id, "", nil
			}
		}
		if fresh {
			return "", fmt.Sprintf("floating network %s has no subnet named %q", network, name), nil
		}
	}
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
