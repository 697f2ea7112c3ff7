package env

import (
	"context"
	"errors"
	"fmt"

	"github.com/kuryr-k8s/kuryr/pkg/names"
	"github.com/kuryr-k8s/kuryr/pkg/neutron"
	"github.com/kuryr-k8s/kuryr/pkg/octavia"
)

// Owned is what kuryr owns in OpenStack for the cluster, listed directly
// rather than through the sweep's notion of an orphan: every object tagged
// for the cluster, and its address groups (which take no tags) by the
// description kuryr gives them.
type Owned struct {
	Ports          []neutron.Port
	Networks       []neutron.Network
	SecurityGroups []neutron.SecurityGroup
	FloatingIPs    []neutron.FloatingIP
	AddressGroups  []neutron.AddressGroup
	// LoadBalancers: none without Octavia (nothing to list them with).
	LoadBalancers []octavia.LoadBalancer
	// Unlisted are the kinds that could not be listed (their lists are
	// empty, not "none there").
	Unlisted map[string]bool
}

// ListOwned lists what kuryr owns. A kind that cannot be listed is left
// empty and named in the error; the others are listed all the same.
func (c *Cloud) ListOwned(ctx context.Context) (Owned, error) {
	var o Owned
	cluster := c.Config.Kubernetes.ClusterName
	tag := []string{names.ClusterTag(cluster)}
	n := c.Neutron
	var errs []error
	o.Unlisted = map[string]bool{}
	part := func(kind string, err error) {
		if err != nil {
			errs = append(errs, fmt.Errorf("list %s: %w", kind, err))
			o.Unlisted[kind] = true
		}
	}
	var err error
	o.Ports, err = n.ListPorts(ctx, tag, "")
	part("ports", err)
	o.Networks, err = n.ListNetworks(ctx, tag)
	part("networks", err)
	o.SecurityGroups, err = n.FindSecurityGroups(ctx, tag)
	part("security groups", err)
	o.FloatingIPs, err = n.ListFloatingIPs(ctx, neutron.FloatingIPFilter{Tags: tag})
	part("floating IPs", err)
	ags, err := n.ListAddressGroups(ctx, "")
	part("address groups", err)
	for _, ag := range ags {
		if ag.Description == names.PeerAddressGroupDescription(cluster) || ag.Description == names.AddressGroupProbeDescription(cluster) {
			o.AddressGroups = append(o.AddressGroups, ag)
		}
	}
	if c.Octavia != nil {
		o.LoadBalancers, err = c.Octavia.FindLoadBalancers(ctx, tag)
		part("load balancers", err)
	}
	return o, errors.Join(errs...)
}
