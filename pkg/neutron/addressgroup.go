package neutron

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/security/addressgroups"
)

// AddressGroup is a named set of addresses that security-group rules can
// name as their remote (remote_address_group_id); ML2/OVN renders it as an
// OVN address set, so a change of members rewrites no rule.
type AddressGroup struct {
	ID, Name  string
	Addresses []string // CIDRs, as Neutron normalizes them (a host is /32 or /128)
	Tags      []string
	CreatedAt time.Time
}

// agList filters address groups by tags, which gophercloud's ListOpts
// does not carry.
type agList struct {
	Tags string `q:"tags"`
}

func (o agList) ToAddressGroupListQuery() (string, error) {
	q, err := gophercloud.BuildQueryString(o)
	if err != nil {
		return "", err
	}
	return q.String(), nil
}

// agBody is an address group as Neutron returns it, tags included.
type agBody struct {
	ID        string    `json:"id"`
	Name      string    `json:"name"`
	Addresses []string  `json:"addresses"`
	Tags      []string  `json:"tags"`
	CreatedAt time.Time `json:"created_at"`
}

// FindAddressGroups lists the address groups carrying all of tags.
func (c *Client) FindAddressGroups(ctx context.Context, tags []string) ([]AddressGroup, error) {
	pages, err := addressgroups.List(c.sc, agList{Tags: strings.Join(tags, ",")}).AllPages(ctx)
	if err != nil {
		return nil, fmt.Errorf("list address groups tagged %v: %w", tags, err)
	}
	var all []agBody
	if err := pages.(addressgroups.AddressGroupPage).ExtractIntoSlicePtr(&all, "address_groups"); err != nil {
		return nil, fmt.Errorf("decode address groups: %w", err)
	}
	out := make([]AddressGroup, 0, len(all))
	for _, g := range all {
		out = append(out, AddressGroup(g))
	}
	return out, nil
}

// CreateAddressGroup creates an address group holding addresses, then
// tags it (deleting it again if the tagging fails).
func (c *Client) CreateAddressGroup(ctx context.Context, name, project string, addresses, tags []string) (*AddressGroup, error) {
	g, err := addressgroups.Create(ctx, c.sc, addressgroups.CreateOpts{Name: name, ProjectID: project, Addresses: addresses}).Extract()
	if err != nil {
		return nil, fmt.Errorf("create address group %s: %w", name, err)
	}
	if err := c.setTags(ctx, "address-groups", g.ID, tags); err != nil {
		_ = c.DeleteAddressGroup(ctx, g.ID)
		return nil, err
	}
	return &AddressGroup{ID: g.ID, Name: g.Name, Addresses: g.Addresses, Tags: tags}, nil
}

// AddAddresses and RemoveAddresses change an address group's members in
// one call each.
func (c *Client) AddAddresses(ctx context.Context, id string, addresses []string) error {
	if _, err := addressgroups.AddAddresses(ctx, c.sc, id, addressgroups.UpdateAddressesOpts{Addresses: addresses}).Extract(); err != nil {
		return fmt.Errorf("add %v to address group %s: %w", addresses, id, err)
	}
	return nil
}

func (c *Client) RemoveAddresses(ctx context.Context, id string, addresses []string) error {
	if _, err := addressgroups.RemoveAddresses(ctx, c.sc, id, addressgroups.UpdateAddressesOpts{Addresses: addresses}).Extract(); err != nil {
		return fmt.Errorf("remove %v from address group %s: %w", addresses, id, err)
	}
	return nil
}

// DeleteAddressGroup deletes an address group; one already gone is not an
// error (Neutron answers 409 while a rule names it).
func (c *Client) DeleteAddressGroup(ctx context.Context, id string) error {
	if err := ignoreNotFound(addressgroups.Delete(ctx, c.sc, id).ExtractErr()); err != nil {
		return fmt.Errorf("delete address group %s: %w", id, err)
	}
	return nil
}
