package neutron

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/trunk_details"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/trunks"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
)

// SubportOwner is the device_owner Neutron gives a port it attaches to a
// trunk (and leaves after the detach on some releases).
const SubportOwner = "trunk:subport"

// Subport is a port attached to a trunk with its VLAN id.
type Subport = trunks.Subport

// ParentPort is a VM's port: the parent of its trunk (nested-vlan) or the
// port whose allowed address pairs carry its pods (nested-macvlan).
type ParentPort struct {
	ports.Port
	trunk_details.TrunkDetailsExt
}

// ParentPorts lists the ports holding ip on one of subnets: a VM node's
// NIC, found from the node's address. With no subnets, on any subnet but
// only Nova's ports (device_owner compute:*, not kuryr's own): another
// network of the project may reuse the address.
func (c *Client) ParentPorts(ctx context.Context, ip string, subnets []string) ([]ParentPort, error) {
	q := url.Values{"fixed_ips": {"ip_address=" + ip}}
	var res gophercloud.Result
	if _, err := c.sc.Get(ctx, c.sc.ServiceURL("ports")+"?"+q.Encode(), &res.Body, nil); err != nil {
		return nil, fmt.Errorf("list ports with address %s: %w", ip, err)
	}
	// ports.Port decodes itself: only gophercloud's extraction also fills
	// the embedded trunk details.
	var all, out []ParentPort
	if err := res.ExtractIntoSlicePtr(&all, "ports"); err != nil {
		return nil, fmt.Errorf("decode ports with address %s: %w", ip, err)
	}
	for _, p := range all {
		for _, f := range p.FixedIPs {
			if f.IPAddress == ip && (slices.Contains(subnets, f.SubnetID) || len(subnets) == 0 && novaPort(p.DeviceOwner)) {
				out = append(out, p)
				break
			}
		}
	}
	return out, nil
}

// GetParentPort reads a VM's port with its trunk details and revision.
func (c *Client) GetParentPort(ctx context.Context, id string) (*ParentPort, error) {
	var p ParentPort
	if err := ports.Get(ctx, c.sc, id).ExtractInto(&p); err != nil {
		return nil, fmt.Errorf("get port %s: %w", id, err)
	}
	return &p, nil
}

// Subports lists a trunk's subports.
func (c *Client) Subports(ctx context.Context, trunkID string) ([]Subport, error) {
	s, err := trunks.GetSubports(ctx, c.sc, trunkID).Extract()
	if err != nil {
		return nil, fmt.Errorf("list subports of trunk %s: %w", trunkID, err)
	}
	return s, nil
}

// AddSubports attaches ports to a trunk, all or none (Neutron's call is
// atomic). A VLAN id already taken on the trunk is refused with 409
// DuplicateSubPort (VLANTaken).
func (c *Client) AddSubports(ctx context.Context, trunkID string, subs []Subport) error {
	if _, err := trunks.AddSubports(ctx, c.sc, trunkID, trunks.AddSubportsOpts{Subports: subs}).Extract(); err != nil {
		return fmt.Errorf("attach %d subports to trunk %s: %w", len(subs), trunkID, err)
	}
	return nil
}

// RemoveSubports detaches ports from a trunk; ports no longer on it are
// not an error (Neutron refuses the whole call for one of them: the rest
// are then detached one by one).
func (c *Client) RemoveSubports(ctx context.Context, trunkID string, portIDs []string) error {
	if len(portIDs) == 0 {
		return nil
	}
	var subs []trunks.RemoveSubport
	for _, id := range portIDs {
		subs = append(subs, trunks.RemoveSubport{PortID: id})
	}
	_, err := trunks.RemoveSubports(ctx, c.sc, trunkID, trunks.RemoveSubportsOpts{Subports: subs}).Extract()
	switch {
	case err == nil:
		return nil
	case IsNotFound(err) && len(portIDs) > 1:
		for _, id := range portIDs {
			if err := c.RemoveSubports(ctx, trunkID, []string{id}); err != nil {
				return err
			}
		}
		return nil
	case IsNotFound(err):
		return nil // SubPortNotFound, or the trunk is gone (and its subports with it)
	}
	return fmt.Errorf("detach %d subports from trunk %s: %w", len(portIDs), trunkID, err)
}

// VLANTaken says add_subports was refused because a VLAN id is already in
// use on the trunk (409 DuplicateSubPort).
func VLANTaken(err error) bool {
	return InUse(err) && strings.Contains(err.Error(), "DuplicateSubPort")
}

// subportOfTrunk finds the trunk in Neutron's refusal to delete a subport
// (409 PortInUseAsSubPort: "Port X is currently a subport for trunk Y.").
var subportOfTrunk = regexp.MustCompile(`is currently a subport for trunk ([0-9A-Za-z-]+)`)

// trunkHolding returns the trunk a delete was refused for, "" if it was
// refused for something else.
func trunkHolding(err error) string {
	if !InUse(err) || !strings.Contains(err.Error(), "PortInUseAsSubPort") {
		return ""
	}
	if m := subportOfTrunk.FindStringSubmatch(err.Error()); m != nil {
		return m[1]
	}
	return ""
}

// SetAddressPairs replaces a port's allowed address pairs if the port is
// still at revision (If-Match); PreconditionFailed says it moved on.
func (c *Client) SetAddressPairs(ctx context.Context, portID string, pairs []ports.AddressPair, revision int) error {
	if pairs == nil {
		pairs = []ports.AddressPair{}
	}
	opts := ports.UpdateOpts{AllowedAddressPairs: &pairs, RevisionNumber: &revision}
	if _, err := ports.Update(ctx, c.sc, portID, opts).Extract(); err != nil {
		return fmt.Errorf("set allowed address pairs of port %s at revision %d: %w", portID, revision, err)
	}
	return nil
}

// PreconditionFailed says a conditional update found the resource at
// another revision (412): read it again and retry.
func PreconditionFailed(err error) bool {
	return gophercloud.ResponseCodeIs(err, http.StatusPreconditionFailed)
}

// novaPort says whether a device owner is a Nova instance's.
func novaPort(owner string) bool {
	return strings.HasPrefix(owner, "compute:") && !strings.HasPrefix(owner, "compute:kuryr")
}
