package neutron

import (
	"context"
	"fmt"
	"net/netip"
	"strings"

	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/attributestags"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/mtu"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/networks"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
)

// Network is a Neutron network with its MTU.
type Network struct {
	networks.Network
	mtu.NetworkMTUExt
}

// GetNetwork reads a network.
func (c *Client) GetNetwork(ctx context.Context, id string) (*Network, error) {
	var n Network
	if err := networks.Get(ctx, c.sc, id).ExtractInto(&n); err != nil {
		return nil, fmt.Errorf("get network %s: %w", id, err)
	}
	return &n, nil
}

// NetworkPrefixes are the CIDRs of a network's subnets (e.g. the external
// network's, which kuryr keeps out of what it opens to everyone).
func (c *Client) NetworkPrefixes(ctx context.Context, id string) ([]netip.Prefix, error) {
	n, err := c.GetNetwork(ctx, id)
	if err != nil {
		return nil, err
	}
	var out []netip.Prefix
	for _, sid := range n.Subnets {
		s, err := c.GetSubnet(ctx, sid)
		if err != nil {
			return nil, err
		}
		if p, err := netip.ParsePrefix(s.CIDR); err == nil {
			out = append(out, p.Masked())
		}
	}
	return out, nil
}

// CreateNetwork creates a network and then tags it: Neutron rejects tags in
// a network create body. A crash between the two leaves an untagged network
// named after its namespace, which FindNetwork still finds by name.
func (c *Client) CreateNetwork(ctx context.Context, name, project string, tags []string) (*Network, error) {
	var n Network
	if err := networks.Create(ctx, c.sc, networks.CreateOpts{Name: name, ProjectID: project}).ExtractInto(&n); err != nil {
		return nil, fmt.Errorf("create network %q: %w", name, err)
	}
	if err := c.setTags(ctx, "networks", n.ID, tags); err != nil {
		return &n, err
	}
	n.Tags = tags
	return &n, nil
}

// FindNetwork returns the network with this exact name in project, or nil.
func (c *Client) FindNetwork(ctx context.Context, name, project string) (*Network, error) {
	pages, err := networks.List(c.sc, networks.ListOpts{Name: name, ProjectID: project}).AllPages(ctx)
	if err != nil {
		return nil, fmt.Errorf("find network %q: %w", name, err)
	}
	var found []Network
	if err := networks.ExtractNetworksInto(pages, &found); err != nil {
		return nil, fmt.Errorf("decode networks: %w", err)
	}
	if len(found) == 0 {
		return nil, nil
	}
	return &found[0], nil
}

// ListNetworks lists the networks carrying all of tags.
func (c *Client) ListNetworks(ctx context.Context, tags []string) ([]Network, error) {
	pages, err := networks.List(c.sc, networks.ListOpts{Tags: strings.Join(tags, ",")}).AllPages(ctx)
	if err != nil {
		return nil, fmt.Errorf("list networks tagged %v: %w", tags, err)
	}
	var out []Network
	if err := networks.ExtractNetworksInto(pages, &out); err != nil {
		return nil, fmt.Errorf("decode networks: %w", err)
	}
	return out, nil
}

// DeleteNetwork deletes a network and its subnets; one already gone is not
// an error. Neutron refuses (409) while ports other than its own remain.
func (c *Client) DeleteNetwork(ctx context.Context, id string) error {
	if err := ignoreNotFound(networks.Delete(ctx, c.sc, id).ExtractErr()); err != nil {
		return fmt.Errorf("delete network %s: %w", id, err)
	}
	return nil
}

// NetworkUsers lists the ports on a network that keep it from being
// deleted and that kuryr must not cut off from the router: every port but
// Neutron's own (router interfaces, DHCP and metadata ports), whose owners
// start with "network:".
func (c *Client) NetworkUsers(ctx context.Context, networkID string) ([]Port, error) {
	pages, err := ports.List(c.sc, ports.ListOpts{NetworkID: networkID}).AllPages(ctx)
	if err != nil {
		return nil, fmt.Errorf("list ports of network %s: %w", networkID, err)
	}
	var all []Port
	if err := ports.ExtractPortsInto(pages, &all); err != nil {
		return nil, fmt.Errorf("decode ports: %w", err)
	}
	return Users(all), nil
}

// Users are the ports among ps that are not Neutron's own. Pure.
func Users(ps []Port) []Port {
	var out []Port
	for _, p := range ps {
		if !strings.HasPrefix(p.DeviceOwner, "network:") {
			out = append(out, p)
		}
	}
	return out
}

func (c *Client) setTags(ctx context.Context, kind, id string, tags []string) error {
	if _, err := attributestags.ReplaceAll(ctx, c.sc, kind, id, attributestags.ReplaceAllOpts{Tags: tags}).Extract(); err != nil {
		return fmt.Errorf("tag %s %s: %w", kind, id, err)
	}
	return nil
}
