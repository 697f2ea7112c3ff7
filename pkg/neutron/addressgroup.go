package neutron

import (
	"context"
	"fmt"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/gophercloud/gophercloud/v2"
)

// AddressGroup is a Neutron address group (extension address-group): a
// set of CIDRs a security group rule can name as its remote
// (remote_address_group_id). Neutron gives address groups no tags (the
// tags sub-resource answers 404, a tags filter 400): kuryr finds its own by
// name, and says whose they are in their description. gophercloud has no
// client for them (gophercloud#3200): these calls are the REST API's.
type AddressGroup struct {
	ID          string    `json:"id"`
	Name        string    `json:"name"`
	Description string    `json:"description"`
	Addresses   []string  `json:"addresses"`
	CreatedAt   time.Time `json:"created_at"`
}

// AddressGroupsNamed lists the address groups called name.
func (c *Client) AddressGroupsNamed(ctx context.Context, name string) ([]AddressGroup, error) {
	return c.listAddressGroups(ctx, "?name="+url.QueryEscape(name))
}

// ListAddressGroups lists the address groups of a project ("": all the
// credential sees), with their addresses, in one request. A Neutron
// without the address-group extension has none (404 is an empty list).
func (c *Client) ListAddressGroups(ctx context.Context, project string) ([]AddressGroup, error) {
	query := ""
	if project != "" {
		query = "?project_id=" + url.QueryEscape(project)
	}
	ags, err := c.listAddressGroups(ctx, query)
	if IsNotFound(err) {
		return nil, nil
	}
	return ags, err
}

func (c *Client) listAddressGroups(ctx context.Context, query string) ([]AddressGroup, error) {
	var body struct {
		AddressGroups []AddressGroup `json:"address_groups"`
	}
	if _, err := c.sc.Get(ctx, c.sc.ServiceURL("address-groups")+query, &body, nil); err != nil {
		return nil, fmt.Errorf("list address groups%s: %w", query, err)
	}
	return body.AddressGroups, nil
}

// GetAddressGroup reads an address group with its addresses.
func (c *Client) GetAddressGroup(ctx context.Context, id string) (*AddressGroup, error) {
	var body struct {
		AddressGroup AddressGroup `json:"address_group"`
	}
	if _, err := c.sc.Get(ctx, c.sc.ServiceURL("address-groups", id), &body, nil); err != nil {
		return nil, fmt.Errorf("get address group %s: %w", id, err)
	}
	return &body.AddressGroup, nil
}

// CreateAddressGroup creates an address group holding addresses.
func (c *Client) CreateAddressGroup(ctx context.Context, name, description, project string, addresses []string) (*AddressGroup, error) {
	ag := map[string]any{"name": name, "description": description, "addresses": nonNil(addresses)}
	if project != "" {
		ag["project_id"] = project
	}
	var body struct {
		AddressGroup AddressGroup `json:"address_group"`
	}
	_, err := c.sc.Post(ctx, c.sc.ServiceURL("address-groups"), map[string]any{"address_group": ag}, &body,
		&gophercloud.RequestOpts{OkCodes: []int{201}})
	if err != nil {
		return nil, fmt.Errorf("create address group %s: %w", name, err)
	}
	return &body.AddressGroup, nil
}

// AddAddresses adds addresses to an address group and returns the group
// as Neutron then has it. Neutron refuses the whole call (400
// AddressesAlreadyExist) if one of them is there already.
func (c *Client) AddAddresses(ctx context.Context, id string, addresses []string) (*AddressGroup, error) {
	return c.changeAddresses(ctx, id, "add_addresses", addresses)
}

// RemoveAddresses takes addresses out of an address group. Neutron refuses
// the whole call (404 AddressesNotFound) if one of them is not there.
func (c *Client) RemoveAddresses(ctx context.Context, id string, addresses []string) (*AddressGroup, error) {
	return c.changeAddresses(ctx, id, "remove_addresses", addresses)
}

func (c *Client) changeAddresses(ctx context.Context, id, action string, addresses []string) (*AddressGroup, error) {
	var body struct {
		AddressGroup AddressGroup `json:"address_group"`
	}
	_, err := c.sc.Put(ctx, c.sc.ServiceURL("address-groups", id, action), map[string]any{"addresses": nonNil(addresses)},
		&body, &gophercloud.RequestOpts{OkCodes: []int{200}})
	if err != nil {
		return nil, fmt.Errorf("%s %v of address group %s: %w", action, addresses, id, err)
	}
	return &body.AddressGroup, nil
}

// DeleteAddressGroup deletes an address group; one already gone is not an
// error. Neutron answers 409 while a rule names it.
func (c *Client) DeleteAddressGroup(ctx context.Context, id string) error {
	_, err := c.sc.Delete(ctx, c.sc.ServiceURL("address-groups", id), nil)
	if err := ignoreNotFound(err); err != nil {
		return fmt.Errorf("delete address group %s: %w", id, err)
	}
	return nil
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// HostPrefix is an address as Neutron keeps it in an address group: the
// host prefix (10.0.0.5 → 10.0.0.5/32). A prefix is masked.
func HostPrefix(a string) (string, error) {
	if p, err := netip.ParsePrefix(a); err == nil {
		return p.Masked().String(), nil
	}
	ip, err := netip.ParseAddr(a)
	if err != nil {
		return "", fmt.Errorf("not an address or a prefix: %q", a)
	}
	return netip.PrefixFrom(ip.Unmap(), ip.Unmap().BitLen()).String(), nil
}

// HostPrefixes are a port's addresses as an address group holds them.
func (p *Port) HostPrefixes() []string {
	var out []string
	for _, ip := range p.FixedIPs {
		if a, err := HostPrefix(ip.IPAddress); err == nil {
			out = append(out, a)
		}
	}
	return out
}

// DiffAddresses returns what to add to and remove from an address group
// holding have so that it holds want (both as HostPrefix gives them). Pure.
func DiffAddresses(want, have []string) (add, remove []string) {
	w, h := setOf(want), setOf(have)
	for a := range w {
		if !h[a] {
			add = append(add, a)
		}
	}
	for a := range h {
		if !w[a] {
			remove = append(remove, a)
		}
	}
	slices.Sort(add)
	slices.Sort(remove)
	return add, remove
}

func setOf(s []string) map[string]bool {
	m := make(map[string]bool, len(s))
	for _, a := range s {
		m[a] = true
	}
	return m
}

// AddressesMoved says an add or remove was refused because the group no
// longer is as the caller read it (an address already there, 400
// AddressesAlreadyExist; one not there, 404 AddressesNotFound): read it
// again and retry.
func AddressesMoved(err error) bool {
	return err != nil && (strings.Contains(err.Error(), "AddressesAlreadyExist") || strings.Contains(err.Error(), "AddressesNotFound"))
}
