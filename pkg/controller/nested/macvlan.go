package nested

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"

	"github.com/kuryr-k8s/kuryr/pkg/keyedlock"
	"github.com/kuryr-k8s/kuryr/pkg/neutron"
)

// pairAPI reads a VM's port and rewrites its allowed address pairs.
type pairAPI interface {
	GetParentPort(ctx context.Context, id string) (*neutron.ParentPort, error)
	SetAddressPairs(ctx context.Context, portID string, pairs []ports.AddressPair, revision int) error
}

// Pairs adds pods' addresses to VMs' ports as allowed address pairs.
// Neutron replaces the whole list on an update, so each change is made at
// the revision it was computed from (If-Match): a writer that lost the
// race (another controller, a user) reads again instead of dropping the
// other's pairs.
type Pairs struct {
	Neutron pairAPI
	// Attempts bounds the re-reads after a revision conflict
	// ([pod_vif_nested] rev_update_attempts).
	Attempts int
	locks    keyedlock.Locks
}

// Add makes each pair allowed on the VM's port (pairs already there are
// kept as they are).
func (p *Pairs) Add(ctx context.Context, parent string, add []ports.AddressPair) error {
	return p.change(ctx, parent, func(have []ports.AddressPair) []ports.AddressPair { return withPairs(have, add) })
}

// Remove takes the given pairs off the VM's port: only a pair with the
// same address and MAC, so that a late Remove for a port whose address was
// since given to another pod's (another MAC) leaves the new pair alone.
func (p *Pairs) Remove(ctx context.Context, parent string, drop []ports.AddressPair) error {
	return p.change(ctx, parent, func(have []ports.AddressPair) []ports.AddressPair { return withoutExact(have, drop) })
}

func (p *Pairs) change(ctx context.Context, parent string, edit func([]ports.AddressPair) []ports.AddressPair) error {
	defer p.locks.Lock(parent)()
	var err error
	for range max(p.Attempts, 1) {
		var port *neutron.ParentPort
		if port, err = p.Neutron.GetParentPort(ctx, parent); err != nil {
			return err
		}
		want := edit(port.AllowedAddressPairs)
		if samePairs(want, port.AllowedAddressPairs) {
			return nil
		}
		err = p.Neutron.SetAddressPairs(ctx, parent, want, port.RevisionNumber)
		if !neutron.PreconditionFailed(err) {
			return err
		}
	}
	return fmt.Errorf("port %s changed under every one of %d updates of its allowed address pairs: %w",
		parent, max(p.Attempts, 1), err)
}

// withPairs is have with add, each address once (add's MAC wins). Pure.
func withPairs(have, add []ports.AddressPair) []ports.AddressPair {
	out := without(have, func(h ports.AddressPair) bool {
		return slices.ContainsFunc(add, func(a ports.AddressPair) bool { return a.IPAddress == h.IPAddress })
	})
	return append(out, add...)
}

// withoutExact is have without the pairs in drop (address and MAC). Pure.
func withoutExact(have, drop []ports.AddressPair) []ports.AddressPair {
	return without(have, func(h ports.AddressPair) bool {
		return slices.ContainsFunc(drop, func(d ports.AddressPair) bool {
			return d.IPAddress == h.IPAddress && strings.EqualFold(d.MACAddress, h.MACAddress)
		})
	})
}

// without is a copy of have without what gone says, never nil (Neutron
// takes an empty list, not null, for "no pairs"). Pure.
func without(have []ports.AddressPair, gone func(ports.AddressPair) bool) []ports.AddressPair {
	return slices.DeleteFunc(append([]ports.AddressPair{}, have...), gone)
}

// samePairs compares as sets.
func samePairs(a, b []ports.AddressPair) bool {
	if len(a) != len(b) {
		return false
	}
	set := map[ports.AddressPair]bool{}
	for _, p := range a {
		set[p] = true
	}
	for _, p := range b {
		if !set[p] {
			return false
		}
	}
	return true
}
