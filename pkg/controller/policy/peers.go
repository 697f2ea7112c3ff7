package policy

import (
	"context"

	kuryrv1 "github.com/kuryr-k8s/kuryr/api/v1"
	"github.com/kuryr-k8s/kuryr/pkg/keyedlock"
	"github.com/kuryr-k8s/kuryr/pkg/names"
	"github.com/kuryr-k8s/kuryr/pkg/neutron"
)

// A peer (the pods one NetworkPolicy peer selects) is a security group
// without rules whose member ports are the peer's pods: the policies'
// rules name it as their remote group, which ML2/OVN renders as the
// address set of a port group. A pod joining or leaving the peer is one
// change of its own port's groups (the KuryrPort reconciler's); no rule
// changes. Policies with an equal peer share its group.
//
// (Neutron address groups would serve too, but ML2/OVN of Neutron 21
// ignores remote_address_group_id: the ACL it writes admits everyone.)

// peerOf is the peer a KuryrNetworkPolicy names.
func peerOf(pp kuryrv1.PolicyPeer) Peer {
	return Peer{Namespace: pp.Namespace, Namespaces: pp.NamespaceSelector, Pods: pp.PodSelector}
}

// PeerLocks serialise work on one peer group (policies sharing it are
// reconciled concurrently, and the address gate takes addresses out of
// address groups): at most one group is ever created per peer. The
// KuryrNetworkPolicy reconciler and the address gate share one.
type PeerLocks struct{ keyedlock.Locks }

func (k *PeerLocks) lock(key string) func() { return k.Lock(key) }

// peerGroup returns the id of the peer's group: the recorded one if it
// still exists, one found by tags or name, or a new one.
func (r *GroupReconciler) peerGroup(ctx context.Context, pp kuryrv1.PolicyPeer, recorded string) (string, error) {
	key := pp.Key
	defer r.Locks.lock(key)()
	sg, err := neutron.EnsureGroup(ctx, r.Neutron, neutron.GroupSpec{Recorded: recorded, Tags: r.peerTags(key),
		Name: names.PeerGroupName(key), ByName: true, Description: "kuryr: the pods of a NetworkPolicy peer",
		Project: r.Settings.ProjectID})
	if err != nil {
		return "", err
	}
	// Without rules: Neutron's default egress rules (left by a crash
	// between the create and their delete too) would let every member out.
	_, _, err = neutron.SyncRules(ctx, r.Neutron, sg, nil, r.ruleSync())
	return sg.ID, err
}

func (r *GroupReconciler) peerTags(key string) []string {
	return []string{names.ClusterTag(r.Settings.Cluster), names.PeerTag(key)}
}

func namesPeer(knp *kuryrv1.KuryrNetworkPolicy, key string) bool {
	for _, pp := range knp.Spec.Peers {
		if pp.Key == key {
			return true
		}
	}
	return false
}

// SweepPeer deletes an orphaned peer group for the sweep, under the peer's
// lock and only if no KuryrNetworkPolicy holds the group now, nor names
// the peer with security-group peers: one made since the sweep read them
// may have just found the group again.
func (r *GroupReconciler) SweepPeer(ctx context.Context, key, id string) error {
	return r.sweep(ctx, r.securityPeers(), key, id)
}
