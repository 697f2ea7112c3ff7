package cleanup

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/go-logr/logr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kuryrv1 "github.com/kuryr-k8s/kuryr/api/v1"
	"github.com/kuryr-k8s/kuryr/pkg/controller/portgroups"
	"github.com/kuryr-k8s/kuryr/pkg/names"
	"github.com/kuryr-k8s/kuryr/pkg/neutron"
)

// PeerSweeper deletes an orphaned peer group unless a policy names its
// peer again (the policy package's, under its per-peer lock).
type PeerSweeper interface {
	SweepPeer(ctx context.Context, key, id string) error
}

// AddressPeerSweeper deletes an orphaned peer address group unless a
// policy names its peer again (the policy package's, under its lock).
type AddressPeerSweeper interface {
	SweepAddressPeer(ctx context.Context, key, id string) error
}

// addressGroups lists the address groups (peers' where Neutron enforces
// them).
type addressGroups interface {
	ListAddressGroups(ctx context.Context, project string) ([]neutron.AddressGroup, error)
}

// OrphanAddressPeers are the cluster's peer address groups (named for a
// peer, described as the cluster's) that no KuryrNetworkPolicy records and
// whose peer no live KuryrNetworkPolicy with address-group peers names;
// not young. Pure.
func OrphanAddressPeers(ags []neutron.AddressGroup, cluster string, l livePolicies, o Owners) map[string]string {
	out := map[string]string{}
	for _, ag := range ags {
		key, ok := strings.CutPrefix(ag.Name, names.PeerGroupPrefix)
		// Without a creation time a group may be new: spared.
		if !ok || ag.Description != names.PeerAddressGroupDescription(cluster) || ag.CreatedAt.IsZero() || o.young(ag.CreatedAt) ||
			l.addressPeers[key] || l.heldAddressGroups[ag.ID] {
			continue
		}
		out[ag.ID] = key
	}
	return out
}

// sweepAddressPeers deletes the orphaned peer address groups (listed
// before Kubernetes was read).
func (s *Sweeper) sweepAddressPeers(ctx context.Context, logger logr.Logger, ags []neutron.AddressGroup, o Owners) error {
	sweeper, ok := s.Peers.(AddressPeerSweeper)
	if !ok || len(ags) == 0 {
		return nil
	}
	live, err := readPolicies(ctx, s.Client)
	if err != nil {
		return err
	}
	var errs []error
	for id, key := range OrphanAddressPeers(ags, s.Cluster, live, o) {
		logger.Info("deleting orphaned peer address group", "addressGroup", id, "peer", key)
		errs = append(errs, sweeper.SweepAddressPeer(ctx, key, id))
	}
	return errors.Join(errs...)
}

// policyGroups is the seam for NetworkPolicies' security groups.
type policyGroups interface {
	FindSecurityGroups(ctx context.Context, tags []string) ([]neutron.SecurityGroup, error)
	DeleteSecurityGroup(ctx context.Context, id string) error
}

// livePolicies are the UIDs of the NetworkPolicies that own a live
// KuryrNetworkPolicy (and of hand-made ones), and the keys of the peers
// those name.
type livePolicies struct {
	uids, peers map[string]bool
	// addressPeers: peers named by policies whose peers are address
	// groups; heldAddressGroups: address groups a policy records.
	addressPeers, heldAddressGroups map[string]bool
}

func readPolicies(ctx context.Context, c client.Reader) (livePolicies, error) {
	l := livePolicies{uids: map[string]bool{}, peers: map[string]bool{}, addressPeers: map[string]bool{},
		heldAddressGroups: map[string]bool{}}
	var knps kuryrv1.KuryrNetworkPolicyList
	if err := c.List(ctx, &knps); err != nil {
		return l, fmt.Errorf("list KuryrNetworkPolicies: %w", err)
	}
	for _, knp := range knps.Items {
		l.uids[string(knp.UID)] = true
		for _, ref := range knp.OwnerReferences {
			l.uids[string(ref.UID)] = true
		}
		for _, id := range knp.Status.PeerAddressGroups {
			l.heldAddressGroups[id] = true
		}
		if knp.DeletionTimestamp.IsZero() {
			for _, pp := range knp.Spec.Peers {
				l.peers[pp.Key] = true
				if knp.Status.PeerKind == kuryrv1.PeerKindAddressGroups {
					l.addressPeers[pp.Key] = true
				}
			}
		}
	}
	return l, nil
}

// OrphanPolicyGroups are the policy groups whose policy has no
// KuryrNetworkPolicy, and the peer groups no live KuryrNetworkPolicy
// names; not young. Pure.
func OrphanPolicyGroups(groups []neutron.SecurityGroup, l livePolicies, o Owners) []neutron.SecurityGroup {
	var out []neutron.SecurityGroup
	for _, g := range groups {
		if o.young(g.CreatedAt) {
			continue
		}
		uid, peer := names.PolicyUIDOf(g.Tags), names.PeerKeyOf(g.Tags)
		if (uid != "" && (o.Uninstall || !names.IsOpenGroup(uid)) && !l.uids[uid]) || (peer != "" && !l.peers[peer]) {
			out = append(out, g)
		}
	}
	return out
}

// sweepPolicies deletes the groups of policies and peers that are gone.
// groups were listed before Kubernetes is read.
func (s *Sweeper) sweepPolicies(ctx context.Context, logger logr.Logger, groups []neutron.SecurityGroup, o Owners) error {
	if s.Policies == nil {
		return nil
	}
	live, err := readPolicies(ctx, s.Client)
	if err != nil {
		return err
	}
	var errs []error
	for _, g := range OrphanPolicyGroups(groups, live, o) {
		logger.Info("deleting orphaned policy group", "securityGroup", g.ID, "name", g.Name,
			"policyUid", names.PolicyUIDOf(g.Tags), "peer", names.PeerKeyOf(g.Tags))
		if key := names.PeerKeyOf(g.Tags); key != "" && s.Peers != nil {
			// Under the peer's lock: a policy made since Kubernetes was
			// read may have found the group again.
			errs = append(errs, s.Peers.SweepPeer(ctx, key, g.ID))
			continue
		}
		// Still named by a KuryrPort (portgroups.GroupOnPorts) or on a
		// pod's port (409): the KuryrPort reconciler takes it off; the next
		// sweep deletes it.
		if busy, err := portgroups.GroupOnPorts(ctx, s.Client, g.ID); err != nil || busy {
			if err != nil {
				errs = append(errs, err)
			}
			continue
		}
		if err := s.Policies.DeleteSecurityGroup(ctx, g.ID); err != nil && !neutron.InUse(err) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
