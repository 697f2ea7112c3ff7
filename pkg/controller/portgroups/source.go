// Package portgroups is the contract between the owners of security
// groups that go onto pods' ports (policies, load balancers) and the one
// writer of a port's groups (the KuryrPort reconciler): an owner is a
// GroupSource, says when it cannot tell yet (GroupsNotReady), and deletes
// a group only once no KuryrPort names it (GroupOnPorts). It imports no
// controller package.
package portgroups

import (
	"context"
	"errors"
	"fmt"
	"slices"

	kuryrv1 "github.com/kuryr-k8s/kuryr/api/v1"
)

// GroupSource says which security groups a pod's port carries beyond
// [neutron_defaults] pod_security_groups.
type GroupSource interface {
	Groups(ctx context.Context, kp *kuryrv1.KuryrPort) ([]string, error)
}

// Defaults is implemented by a GroupSource that can tell, without a pod,
// the groups it gives a pod that nothing selects (NetworkPolicies: the
// open groups). A pool creates its ports with them, so that handing one
// to such a pod writes nothing.
type Defaults interface {
	DefaultGroups(ctx context.Context) ([]string, error)
}

// AddressGate is implemented by the owner of address groups that hold
// pods' addresses (NetworkPolicy peers where Neutron enforces address
// groups): before a KuryrPort gets its port's addresses, they are taken
// out of every group the pod must not be admitted by (ReleaseAddresses),
// and before a port goes back to a pool or is deleted, out of every group
// (ForgetAddresses): an address a gone pod had must not admit whoever
// gets it next.
type AddressGate interface {
	ReleaseAddresses(ctx context.Context, kp *kuryrv1.KuryrPort, addresses []string) error
	ForgetAddresses(ctx context.Context, addresses []string) error
}

// ErrGroupsNotReady: a source cannot tell a port's groups yet (a policy
// that selects the pod has no security group yet). The port waits: it is
// neither created nor changed until the source can tell.
var ErrGroupsNotReady = errors.New("security groups not known yet")

// GroupsNotReady is ErrGroupsNotReady with the groups a running port
// carries meanwhile: what is known, failing closed on what is not (a
// policy whose group is not ready isolates without admitting). A new port
// waits instead.
type GroupsNotReady struct {
	Groups []string
	Cause  error
}

func (e *GroupsNotReady) Error() string        { return fmt.Sprintf("%v: %v", ErrGroupsNotReady, e.Cause) }
func (e *GroupsNotReady) Is(target error) bool { return target == ErrGroupsNotReady }
func (e *GroupsNotReady) Unwrap() error        { return e.Cause }

// Sources are several sources of groups: a port carries them all.
type Sources []GroupSource

// Groups returns the sorted union of every source's groups (a
// GroupsNotReady with the union when one of them is not ready).
func (s Sources) Groups(ctx context.Context, kp *kuryrv1.KuryrPort) ([]string, error) {
	var out []string
	var notReady *GroupsNotReady
	for _, src := range s {
		gs, err := src.Groups(ctx, kp)
		var nr *GroupsNotReady
		switch {
		case errors.As(err, &nr):
			notReady, gs = nr, nr.Groups
		case err != nil:
			return nil, err
		}
		out = append(out, gs...)
	}
	slices.Sort(out)
	out = slices.Compact(out)
	if notReady != nil {
		return nil, &GroupsNotReady{Groups: out, Cause: notReady.Cause}
	}
	return out, nil
}

// ReleaseAddresses asks every source that is an AddressGate.
func (s Sources) ReleaseAddresses(ctx context.Context, kp *kuryrv1.KuryrPort, addresses []string) error {
	for _, src := range s {
		if g, ok := src.(AddressGate); ok {
			if err := g.ReleaseAddresses(ctx, kp, addresses); err != nil {
				return err
			}
		}
	}
	return nil
}

// ForgetAddresses asks every source that is an AddressGate.
func (s Sources) ForgetAddresses(ctx context.Context, addresses []string) error {
	for _, src := range s {
		if g, ok := src.(AddressGate); ok {
			if err := g.ForgetAddresses(ctx, addresses); err != nil {
				return err
			}
		}
	}
	return nil
}

// DefaultGroups returns the sorted union of the default groups of the
// sources that have them.
func (s Sources) DefaultGroups(ctx context.Context) ([]string, error) {
	var out []string
	for _, src := range s {
		if d, ok := src.(Defaults); ok {
			gs, err := d.DefaultGroups(ctx)
			if err != nil {
				return nil, err
			}
			out = append(out, gs...)
		}
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}
