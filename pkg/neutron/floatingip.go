package neutron

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/floatingips"
)

// FloatingIP is what kuryr needs of a floating IP.
type FloatingIP struct {
	ID, Address, PortID, NetworkID string
	Description                    string
	Tags                           []string
	CreatedAt                      time.Time
}

// FloatingIPFilter selects floating IPs; empty fields match everything.
type FloatingIPFilter struct {
	PortID, Address, NetworkID string
	Tags                       []string
}

// ListFloatingIPs lists the floating IPs matching f.
func (c *Client) ListFloatingIPs(ctx context.Context, f FloatingIPFilter) ([]FloatingIP, error) {
	pages, err := floatingips.List(c.sc, floatingips.ListOpts{PortID: f.PortID, FloatingIP: f.Address,
		FloatingNetworkID: f.NetworkID, Tags: strings.Join(f.Tags, ",")}).AllPages(ctx)
	if err != nil {
		return nil, fmt.Errorf("list floating IPs %+v: %w", f, err)
	}
	all, err := floatingips.ExtractFloatingIPs(pages)
	if err != nil {
		return nil, fmt.Errorf("decode floating IPs: %w", err)
	}
	out := make([]FloatingIP, 0, len(all))
	for _, ip := range all {
		out = append(out, FloatingIP{ID: ip.ID, Address: ip.FloatingIP, PortID: ip.PortID, NetworkID: ip.FloatingNetworkID,
			Description: ip.Description, Tags: ip.Tags, CreatedAt: ip.CreatedAt})
	}
	return out, nil
}

// CreateFloatingIP allocates a floating IP on network (and subnet, if set)
// associated with port, then tags it. A floating IP whose tagging failed is
// still found by its port.
func (c *Client) CreateFloatingIP(ctx context.Context, network, subnet, port, project, description string, tags []string) (*FloatingIP, error) {
	ip, err := floatingips.Create(ctx, c.sc, floatingips.CreateOpts{FloatingNetworkID: network, SubnetID: subnet,
		PortID: port, ProjectID: project, Description: description}).Extract()
	if err != nil {
		return nil, fmt.Errorf("allocate a floating IP on network %s for port %s: %w", network, port, err)
	}
	out := &FloatingIP{ID: ip.ID, Address: ip.FloatingIP, PortID: ip.PortID, NetworkID: ip.FloatingNetworkID,
		Description: description, Tags: tags}
	return out, c.setTags(ctx, "floatingips", ip.ID, tags)
}

// AssociateFloatingIP points a floating IP at port ("" disassociates it).
func (c *Client) AssociateFloatingIP(ctx context.Context, id, port string) error {
	var p *string
	if port != "" {
		p = &port
	}
	if _, err := floatingips.Update(ctx, c.sc, id, floatingips.UpdateOpts{PortID: p}).Extract(); err != nil {
		return fmt.Errorf("associate floating IP %s with port %q: %w", id, port, err)
	}
	return nil
}

// DeleteFloatingIP releases a floating IP; one already gone is not an error.
func (c *Client) DeleteFloatingIP(ctx context.Context, id string) error {
	if err := ignoreNotFound(floatingips.Delete(ctx, c.sc, id).ExtractErr()); err != nil {
		return fmt.Errorf("release floating IP %s: %w", id, err)
	}
	return nil
}
