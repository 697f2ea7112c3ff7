package policy

import (
	"context"
	"slices"
	"strings"

	"sigs.k8s.io/controller-runtime/pkg/log"

	kuryrv1 "github.com/kuryr-k8s/kuryr/api/v1"
	"github.com/kuryr-k8s/kuryr/pkg/names"
	"github.com/kuryr-k8s/kuryr/pkg/neutron"
)

// Where Neutron enforces a rule's remote address group (ML2/OVN from
// Neutron 26.0.0; the controller probes it at start, package agprobe), a
// peer is an address group holding its pods' addresses instead of a
// security group its pods' ports are members of: a pod joining or leaving
// the peer is one add_addresses or remove_addresses call of this
// reconciler, not an update of the pod's port, and ports carry only their
// policies' groups. Neutron gives address groups no tags: kuryr's are found
// by name (names.PeerGroupName) and description (the cluster's).

// addressAPI is the Neutron seam of the peers' address groups.
type addressAPI interface {
	AddressGroupsNamed(ctx context.Context, name string) ([]neutron.AddressGroup, error)
	GetAddressGroup(ctx context.Context, id string) (*neutron.AddressGroup, error)
	CreateAddressGroup(ctx context.Context, name, description, project string, addresses []string) (*neutron.AddressGroup, error)
	AddAddresses(ctx context.Context, id string, addresses []string) (*neutron.AddressGroup, error)
	RemoveAddresses(ctx context.Context, id string, addresses []string) (*neutron.AddressGroup, error)
	DeleteAddressGroup(ctx context.Context, id string) error
}

// PeerMode says how peers are enforced: with address groups or not, and
// whether that is decided yet (the probe has answered once).
type PeerMode interface {
	AddressGroups() (use, decided bool)
}

// addressMode says whether a policy's peers are address groups. Until the
// probe's first answer a policy keeps the kind its status shows (a
// restart does not flip it), and a new one gets security groups (safe on
// every Neutron; it moves once the answer is address groups).
func (r *GroupReconciler) addressMode(knp *kuryrv1.KuryrNetworkPolicy) bool {
	if r.Mode == nil {
		return false
	}
	if use, decided := r.Mode.AddressGroups(); decided {
		return use
	}
	return knp.Status.PeerKind == kuryrv1.PeerKindAddressGroups ||
		(len(knp.Status.PeerAddressGroups) > 0 && len(knp.Status.PeerGroups) == 0)
}

func (r *GroupReconciler) addressDescription() string {
	return names.PeerAddressGroupDescription(r.Settings.Cluster)
}

// peerAddressGroup returns the id of the peer's address group (the
// recorded one if it still exists, one found by name, or a new one made
// with the addresses), its addresses made exactly those of the peer's
// pods. The pods are read under the peer's lock, after whatever the
// address gate did under it: an address it took out for a new pod is not
// put back from an older read.
func (r *GroupReconciler) peerAddressGroup(ctx context.Context, pp kuryrv1.PolicyPeer, recorded string) (string, error) {
	defer r.Locks.lock("ag/" + pp.Key)()
	members, err := readMembers(ctx, r.Client)
	if err != nil {
		return "", err
	}
	want := members.Addresses(peerOf(pp))
	ag, err := r.findAddressGroup(ctx, pp.Key, recorded)
	if err != nil {
		return "", err
	}
	if ag == nil {
		ag, err = r.Neutron.CreateAddressGroup(ctx, names.PeerGroupName(pp.Key), r.addressDescription(), r.Settings.ProjectID, want)
		return idOf(ag), err
	}
	return ag.ID, r.syncAddresses(ctx, ag, want)
}

func idOf(ag *neutron.AddressGroup) string {
	if ag == nil {
		return ""
	}
	return ag.ID
}

// findAddressGroup: the recorded group, else the oldest of the cluster's
// groups named for the peer (a crash between the create and the record,
// or a create that went unanswered), else nil.
func (r *GroupReconciler) findAddressGroup(ctx context.Context, key, recorded string) (*neutron.AddressGroup, error) {
	if recorded != "" {
		ag, err := r.Neutron.GetAddressGroup(ctx, recorded)
		if !neutron.IsNotFound(err) {
			return ag, err
		}
	}
	found, err := r.Neutron.AddressGroupsNamed(ctx, names.PeerGroupName(key))
	if err != nil {
		return nil, err
	}
	found = slices.DeleteFunc(found, func(ag neutron.AddressGroup) bool { return ag.Description != r.addressDescription() })
	if len(found) == 0 {
		return nil, nil
	}
	slices.SortFunc(found, func(a, b neutron.AddressGroup) int {
		if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	return &found[0], nil
}

// syncAddresses makes the group hold exactly want: additions first (a
// pod admitted a moment early is admitted by the policy anyway), then
// removals. Neutron refuses a whole call when the group changed since it
// was read (the gate took an address out meanwhile): it is read again and
// the difference applied again, a few times.
func (r *GroupReconciler) syncAddresses(ctx context.Context, ag *neutron.AddressGroup, want []string) error {
	var err error
	for range 3 {
		if err = r.applyAddresses(ctx, ag, want); !neutron.AddressesMoved(err) {
			return err
		}
		if ag, err = r.Neutron.GetAddressGroup(ctx, ag.ID); err != nil {
			return err
		}
	}
	return err
}

func (r *GroupReconciler) applyAddresses(ctx context.Context, ag *neutron.AddressGroup, want []string) error {
	have := make([]string, 0, len(ag.Addresses))
	for _, a := range ag.Addresses {
		if p, err := neutron.HostPrefix(a); err == nil {
			have = append(have, p)
		}
	}
	add, remove := neutron.DiffAddresses(want, have)
	if len(add) > 0 {
		if _, err := r.Neutron.AddAddresses(ctx, ag.ID, add); err != nil {
			return err
		}
	}
	if len(remove) > 0 {
		if _, err := r.Neutron.RemoveAddresses(ctx, ag.ID, remove); err != nil {
			return err
		}
	}
	if len(add)+len(remove) > 0 {
		log.FromContext(ctx).V(1).Info("peer addresses applied", "addressGroup", ag.ID, "added", len(add), "removed", len(remove))
	}
	return nil
}

// SweepAddressPeer deletes an orphaned peer address group for the sweep,
// under the peer's lock and only if no KuryrNetworkPolicy holds the group
// now, nor names the peer with address-group peers.
func (r *GroupReconciler) SweepAddressPeer(ctx context.Context, key, id string) error {
	return r.sweep(ctx, r.addressPeers(), key, id)
}
