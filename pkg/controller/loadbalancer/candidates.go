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
	// name), else external_svc_net and external_svc_subnet.
	network, subnet, subnetName string
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
		return ours(f, uid) && (f.NetworkID == "" || f.NetworkID == c.network)
	}
	return f.Address == c.addr
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

// floatingSubnet is the subnet c allocates any address on: c's subnet, or
// the subnet of c's network with c's subnet name ("" and why when there is
// none).
func (r *Reconciler) floatingSubnet(ctx context.Context, c candidate) (string, string, error) {
	if c.subnetName == "" {
		return c.subnet, "", nil
	}
	net, err := r.Info.Network(ctx, c.network)
	if err != nil {
		if neutron.IsNotFound(err) {
			return "", "floating network " + c.network + " not found", nil
		}
		return "", "", err
	}
	for _, id := range net.Subnets {
		sub, err := r.Info.Subnet(ctx, id)
		if err != nil {
			return "", "", err
		}
		if sub.Name == c.subnetName {
			return id, "", nil
		}
	}
	return "", fmt.Sprintf("floating network %s has no subnet named %q", c.network, c.subnetName), nil
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
