package neutron

import (
	"context"
	"fmt"
	"strings"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/portsbinding"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/portsecurity"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
)

// Port is a Neutron port with its binding details.
type Port struct {
	ports.Port
	portsbinding.PortsBindingExt
}

// Client is kuryr's Neutron client.
type Client struct{ sc *gophercloud.ServiceClient }

// New wraps a network service client.
func New(sc *gophercloud.ServiceClient) *Client { return &Client{sc: sc} }

// PortSpec is what kuryr asks of a pod's port.
type PortSpec struct {
	Name, NetworkID, SubnetID, ProjectID string
	HostID, DeviceID, DeviceOwner        string
	SecurityGroups                       []string
	Tags                                 []string
	// NoPortSecurity turns port security off (no security groups, no
	// address checks): for a node's management port, which carries the
	// node's own traffic.
	NoPortSecurity bool
}

// tagged adds tags to a port create request: Neutron accepts them in the
// body, which saves a request per port (gophercloud has no field for it).
type tagged struct {
	ports.CreateOptsBuilder
	tags []string
}

func (t tagged) ToPortCreateMap() (map[string]any, error) {
	m, err := t.CreateOptsBuilder.ToPortCreateMap()
	if err != nil {
		return nil, err
	}
	m["port"].(map[string]any)["tags"] = t.tags
	return m, nil
}

// createOpts is the create request of one port, tags included.
func createOpts(s PortSpec) ports.CreateOptsBuilder {
	up := true
	opts := ports.CreateOpts{
		Name: s.Name, NetworkID: s.NetworkID, ProjectID: s.ProjectID, AdminStateUp: &up,
		DeviceID: s.DeviceID, DeviceOwner: s.DeviceOwner,
		FixedIPs: []ports.IP{{SubnetID: s.SubnetID}},
	}
	if len(s.SecurityGroups) > 0 {
		sgs := s.SecurityGroups
		opts.SecurityGroups = &sgs
	}
	var b ports.CreateOptsBuilder = opts
	if s.NoPortSecurity {
		off := false
		b = portsecurity.PortCreateOptsExt{CreateOptsBuilder: opts, PortSecurityEnabled: &off}
	}
	return tagged{CreateOptsBuilder: portsbinding.CreateOptsExt{CreateOptsBuilder: b, HostID: s.HostID}, tags: s.Tags}
}

// CreatePorts creates ports in one bulk request (atomic in Neutron).
func (c *Client) CreatePorts(ctx context.Context, specs []PortSpec) ([]Port, error) {
	var body struct {
		Ports []map[string]any `json:"ports"`
	}
	for _, s := range specs {
		m, err := createOpts(s).ToPortCreateMap()
		if err != nil {
			return nil, err
		}
		body.Ports = append(body.Ports, m["port"].(map[string]any))
	}
	var res gophercloud.Result
	if _, err := c.sc.Post(ctx, c.sc.ServiceURL("ports"), body, &res.Body, nil); err != nil {
		return nil, fmt.Errorf("create %d ports: %w", len(specs), err)
	}
	// gophercloud's Port decodes itself; ExtractIntoSlicePtr also fills the
	// embedded binding fields.
	var out []Port
	if err := res.ExtractIntoSlicePtr(&out, "ports"); err != nil {
		return nil, fmt.Errorf("decode created ports: %w", err)
	}
	for i := range out {
		if i < len(specs) && !containsAll(out[i].Tags, specs[i].Tags) {
			if err := c.setTags(ctx, "ports", out[i].ID, specs[i].Tags); err != nil {
				return out, err
			}
			out[i].Tags = specs[i].Tags
		}
	}
	return out, nil
}

// CreatePort creates a port bound to s.HostID.
func (c *Client) CreatePort(ctx context.Context, s PortSpec) (*Port, error) {
	var p Port
	err := ports.Create(ctx, c.sc, createOpts(s)).ExtractInto(&p)
	if err != nil {
		return nil, fmt.Errorf("create port %q on subnet %s: %w", s.Name, s.SubnetID, err)
	}
	// Neutron keeps tags sent in the create body only with the
	// tag_ports_during_bulk_creation extension (which not every release
	// advertises); otherwise it drops them silently. The answer says which.
	if !containsAll(p.Tags, s.Tags) {
		// Until tagged, the port is known only to the caller's ledger.
		if err := c.setTags(ctx, "ports", p.ID, s.Tags); err != nil {
			return &p, err
		}
		p.Tags = s.Tags
	}
	return &p, nil
}

// GetPort reads a port.
func (c *Client) GetPort(ctx context.Context, id string) (*Port, error) {
	var p Port
	if err := ports.Get(ctx, c.sc, id).ExtractInto(&p); err != nil {
		return nil, fmt.Errorf("get port %s: %w", id, err)
	}
	return &p, nil
}

// BindPort binds a port to host (binding:host_id), as Nova does when it
// plugs an instance's port, provided the port is still at revision
// (If-Match; 412 otherwise): Neutron binds it again (status DOWN until the
// host's OVN claims it). A port gone is not an error.
func (c *Client) BindPort(ctx context.Context, id, host string, revision int) error {
	opts := bindOpts{HostID: host, RevisionNumber: &revision}
	if _, err := ports.Update(ctx, c.sc, id, opts).Extract(); ignoreNotFound(err) != nil {
		return fmt.Errorf("bind port %s to %q at revision %d: %w", id, host, revision, err)
	}
	return nil
}

// bindOpts is a port binding update at a revision (gophercloud's
// portsbinding.UpdateOptsExt would drop the If-Match of the options it
// wraps).
type bindOpts struct {
	HostID         string `json:"binding:host_id"`
	RevisionNumber *int   `json:"-" h:"If-Match"`
}

func (o bindOpts) ToPortUpdateMap() (map[string]any, error) {
	return gophercloud.BuildRequestBody(o, "port")
}

// DeletePort deletes a port; one already gone is not an error. A subport
// (nested-vlan), which Neutron refuses to delete (409 PortInUseAsSubPort),
// is detached from its trunk first.
func (c *Client) DeletePort(ctx context.Context, id string) error {
	err := ignoreNotFound(ports.Delete(ctx, c.sc, id).ExtractErr())
	if trunk := trunkHolding(err); trunk != "" {
		if err := c.RemoveSubports(ctx, trunk, []string{id}); err != nil {
			return fmt.Errorf("delete port %s: %w", id, err)
		}
		err = ignoreNotFound(ports.Delete(ctx, c.sc, id).ExtractErr())
	}
	if err != nil {
		return fmt.Errorf("delete port %s: %w", id, err)
	}
	return nil
}

// ListPorts lists the ports carrying all of tags, optionally only those with
// the given status ("" for any).
func (c *Client) ListPorts(ctx context.Context, tags []string, status string) ([]Port, error) {
	pages, err := ports.List(c.sc, ports.ListOpts{Tags: strings.Join(tags, ","), Status: status}).AllPages(ctx)
	if err != nil {
		return nil, fmt.Errorf("list ports tagged %v: %w", tags, err)
	}
	var out []Port
	if err := ports.ExtractPortsInto(pages, &out); err != nil {
		return nil, fmt.Errorf("decode ports: %w", err)
	}
	return out, nil
}

func containsAll(have, want []string) bool {
	set := make(map[string]bool, len(have))
	for _, h := range have {
		set[h] = true
	}
	for _, w := range want {
		if !set[w] {
			return false
		}
	}
	return true
}
