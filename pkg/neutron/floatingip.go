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
	PortID, Address, NetworkID, Description string
	Tags                                    []string
}

// ListFloatingIPs lists the floating IPs matching f.
func (c *Client) ListFloatingIPs(ctx context.Context, f FloatingIPFilter) ([]FloatingIP, error) {
	pages, err := floatingips.List(c.sc, floatingips.ListOpts{PortID: f.PortID, FloatingIP: f.Address,
		FloatingNetworkID: f.NetworkID, Description: f.Description, Tags: strings.Join(f.Tags, ",")}).AllPages(ctx)
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

// FloatingIPSpec is a floating IP to allocate: on Network (and Subnet, if
// set), at Address if set (Neutron's default policy lets only admins
// choose it), associated with Port, then tagged.
type FloatingIPSpec struct {
	Network, Subnet, Port, Project, Address, Description string
	Tags                                                 []string
}

// CreateFloatingIP allocates a floating IP as s says, then tags it. A
// floating IP whose tagging failed is still found by its port, and by its
// description.
func (c *Client) CreateFloatingIP(ctx context.Context, s FloatingIPSpec) (*FloatingIP, error) {
	ip, err := floatingips.Create(ctx, c.sc, floatingips.CreateOpts{FloatingNetworkID: s.Network, SubnetID: s.Subnet,
		FloatingIP: s.Address, PortID: s.Port, ProjectID: s.Project, Description: s.Description}).Extract()
	if err != nil {
		return nil, fmt.Errorf("allocate a floating IP %son network %s for port %s: %w", addressText(s.Address), s.Network, s.Port, err)
	}
	out := &FloatingIP{ID: ip.ID, Address: ip.FloatingIP, PortID: ip.PortID, NetworkID: ip.FloatingNetworkID,
		Description: s.Description, Tags: s.Tags}
	return out, c.setTags(ctx, "floatingips", ip.ID, s.Tags)
}

func addressText(a string) string {
	if a == "" {
		return ""
	}
	return a + " "
}

// HandOverFloatingIP makes a floating IP kuryr allocated the user's: its
// description goes, then its tags become tags (kuryr's removed).
func (c *Client) HandOverFloatingIP(ctx context.Context, id string, tags []string) error {
	empty := ""
	if _, err := floatingips.Update(ctx, c.sc, id, floatingips.UpdateOpts{Description: &empty}).Extract(); err != nil {
		return fmt.Errorf("clear the description of floating IP %s: %w", id, err)
	}
	return c.setTags(ctx, "floatingips", id, tags)
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
