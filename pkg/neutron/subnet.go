package neutron

import (
	"context"
	"fmt"

	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/subnetpools"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/subnets"
)

// Subnet is what kuryr needs of a Neutron subnet: where its addresses come
// from and what a port on it must be told (gateway, routes, DNS).
type Subnet struct {
	ID, NetworkID string
	Name          string
	Tags          []string
	CIDR          string
	GatewayIP     string
	HostRoutes    []Route
	DNS           []string
	// Pools are the ranges Neutron allocates its ports' addresses from.
	Pools []Range
}

// Range is an allocation pool: first and last address.
type Range struct{ Start, End string }

// Route is a subnet's host route.
type Route struct{ Destination, NextHop string }

func subnetOf(s *subnets.Subnet) *Subnet {
	out := &Subnet{ID: s.ID, NetworkID: s.NetworkID, Name: s.Name, Tags: s.Tags, CIDR: s.CIDR, GatewayIP: s.GatewayIP, DNS: s.DNSNameservers}
	for _, r := range s.HostRoutes {
		out.HostRoutes = append(out.HostRoutes, Route{Destination: r.DestinationCIDR, NextHop: r.NextHop})
	}
	for _, p := range s.AllocationPools {
		out.Pools = append(out.Pools, Range{Start: p.Start, End: p.End})
	}
	return out
}

// GetSubnet reads a subnet.
func (c *Client) GetSubnet(ctx context.Context, id string) (*Subnet, error) {
	s, err := subnets.Get(ctx, c.sc, id).Extract()
	if err != nil {
		return nil, fmt.Errorf("get subnet %s: %w", id, err)
	}
	return subnetOf(s), nil
}

// ListSubnets lists the subnets of a project.
func (c *Client) ListSubnets(ctx context.Context, project string) ([]Subnet, error) {
	pages, err := subnets.List(c.sc, subnets.ListOpts{ProjectID: project}).AllPages(ctx)
	if err != nil {
		return nil, fmt.Errorf("list subnets: %w", err)
	}
	all, err := subnets.ExtractSubnets(pages)
	if err != nil {
		return nil, fmt.Errorf("decode subnets: %w", err)
	}
	out := make([]Subnet, 0, len(all))
	for i := range all {
		out = append(out, *subnetOf(&all[i]))
	}
	return out, nil
}

// EnsureSubnetFromPool returns network's subnet, allocating one from pool if
// it has none: a namespace network carries exactly one subnet.
func (c *Client) EnsureSubnetFromPool(ctx context.Context, networkID, name, project, pool string, tags []string) (*Subnet, error) {
	pages, err := subnets.List(c.sc, subnets.ListOpts{NetworkID: networkID}).AllPages(ctx)
	if err != nil {
		return nil, fmt.Errorf("list subnets of network %s: %w", networkID, err)
	}
	existing, err := subnets.ExtractSubnets(pages)
	if err != nil {
		return nil, fmt.Errorf("decode subnets: %w", err)
	}
	if len(existing) > 0 {
		return subnetOf(&existing[0]), nil
	}
	s, err := subnets.Create(ctx, c.sc, subnets.CreateOpts{
		NetworkID: networkID, Name: name, ProjectID: project, SubnetPoolID: pool, IPVersion: 4,
	}).Extract()
	if err != nil {
		return nil, fmt.Errorf("allocate a subnet from pool %s: %w", pool, err)
	}
	if err := c.setTags(ctx, "subnets", s.ID, tags); err != nil {
		return subnetOf(s), err
	}
	return subnetOf(s), nil
}

// SubnetPoolPrefixes reads the prefixes of a subnet pool.
func (c *Client) SubnetPoolPrefixes(ctx context.Context, id string) ([]string, error) {
	sp, err := subnetpools.Get(ctx, c.sc, id).Extract()
	if err != nil {
		return nil, fmt.Errorf("get subnet pool %s: %w", id, err)
	}
	return sp.Prefixes, nil
}
