package cleanup

import (
	"context"
	"time"

	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"

	"github.com/kuryr-k8s/kuryr/pkg/names"
	"github.com/kuryr-k8s/kuryr/pkg/neutron"
	"github.com/kuryr-k8s/kuryr/pkg/octavia"
)

// Orphans is what a sweep would delete now.
type Orphans struct {
	Ports         []neutron.Port
	Networks      []neutron.Network
	LoadBalancers []octavia.LoadBalancer
	FloatingIPs   []neutron.FloatingIP
	SourceGroups  []neutron.SecurityGroup
	PolicyGroups  []neutron.SecurityGroup
	// PeerAddressGroups: id -> peer key.
	PeerAddressGroups map[string]string
	// Pairs: VM port id -> nested-macvlan pairs no pod owns.
	Pairs map[string][]ports.AddressPair
}

// Count is the number of orphaned objects.
func (o Orphans) Count() int {
	return len(o.Ports) + len(o.Networks) + len(o.LoadBalancers) + len(o.FloatingIPs) +
		len(o.SourceGroups) + len(o.PolicyGroups) + len(o.PeerAddressGroups) + o.PairCount()
}

// PairCount is the number of orphaned pairs, on every VM port.
func (o Orphans) PairCount() int {
	n := 0
	for _, pairs := range o.Pairs {
		n += len(pairs)
	}
	return n
}

// DryRun finds what Sweep would delete, the way it does (OpenStack listed
// first, Kubernetes read after, young objects spared), and deletes
// nothing: for diagnostics (kubectl kuryr doctor). pools says whether port
// pools are on (Pool is not needed). Unlike Sweep, a failed listing of
// Services' resources is an error.
func (s *Sweeper) DryRun(ctx context.Context, pools bool) (Orphans, error) {
	var out Orphans
	listedAt := time.Now()
	tag := []string{names.ClusterTag(s.Cluster)}
	var parents []neutron.ParentPort
	if s.VMPairs != nil { // read before the ports that own their pairs
		var err error
		if parents, err = s.VMPairs.MacvlanParents(ctx); err != nil {
			return out, err
		}
	}
	ports, err := s.Neutron.ListPorts(ctx, tag, "")
	if err != nil {
		return out, err
	}
	nets, err := s.Neutron.ListNetworks(ctx, tag)
	if err != nil {
		return out, err
	}
	svc, err := s.listServiceResources(ctx, tag)
	if err == nil {
		err = svc.failed
	}
	if err != nil {
		return out, err
	}
	var policyGroups []neutron.SecurityGroup
	var peerAddresses []neutron.AddressGroup
	if s.Policies != nil {
		if policyGroups, err = s.Policies.FindSecurityGroups(ctx, tag); err != nil {
			return out, err
		}
		if s.AddressGroups != nil {
			if peerAddresses, err = s.AddressGroups.ListAddressGroups(ctx, ""); err != nil {
				return out, err
			}
		}
	}
	owned, err := s.liveOwners(ctx)
	if err != nil {
		return out, err
	}
	s.stamp(&owned, listedAt)
	owned.PoolEnabled, owned.NodePortsEnabled, owned.RefusePortsEnabled = pools || s.Pool != nil, s.NodePorts, s.RefusePorts
	out.Ports = OrphanPorts(ports, owned)
	out.Pairs = OrphanPairs(parents, ports, owned)
	if out.Networks, err = s.unused(ctx, OrphanNetworks(nets, owned), out.Ports); err != nil {
		return out, err
	}
	if s.Octavia != nil {
		out.LoadBalancers = OrphanLoadBalancers(svc.lbs, owned)
		out.FloatingIPs = OrphanFloatingIPs(svc.fips, owned)
		out.SourceGroups = OrphanGroups(svc.groups, owned)
	}
	if s.Policies != nil {
		live, err := readPolicies(ctx, s.Client)
		if err != nil {
			return out, err
		}
		out.PolicyGroups = OrphanPolicyGroups(policyGroups, live, owned)
		out.PeerAddressGroups = OrphanAddressPeers(peerAddresses, s.Cluster, live, owned)
	}
	return out, nil
}
