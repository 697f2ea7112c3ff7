package policy

import (
	"context"
	"fmt"
	"maps"
	"sync"

	"golang.org/x/sync/errgroup"

	"sigs.k8s.io/controller-runtime/pkg/client"

	kuryrv1 "github.com/kuryr-k8s/kuryr/api/v1"
	"github.com/kuryr-k8s/kuryr/pkg/controller/portgroups"
	"github.com/kuryr-k8s/kuryr/pkg/neutron"
)

// peerKind is what differs between a policy's security-group peers and its
// address-group peers when they are made, recorded, released and swept.
type peerKind struct {
	what string
	// field is the policy's status field recording peers of the kind.
	field func(*kuryrv1.KuryrNetworkPolicy) *map[string]string
	// named: the policy's rules name peers of this kind now.
	named func(*kuryrv1.KuryrNetworkPolicy) bool
	// lock is the lock key of a peer of this kind.
	lock func(key string) string
	// ensure returns the id of the peer's group (the recorded one, one
	// found, or a new one), its content made the peer's.
	ensure func(ctx context.Context, pp kuryrv1.PolicyPeer, recorded string) (string, error)
	// remove deletes a group; done is false while it is still in use
	// (on ports, named by a rule).
	remove func(ctx context.Context, id string) (done bool, err error)
}

func (k peerKind) groups(knp *kuryrv1.KuryrNetworkPolicy) map[string]string { return *k.field(knp) }

func (r *GroupReconciler) securityPeers() peerKind {
	return peerKind{
		what:   "peer groups",
		field:  func(k *kuryrv1.KuryrNetworkPolicy) *map[string]string { return &k.Status.PeerGroups },
		named:  func(k *kuryrv1.KuryrNetworkPolicy) bool { return k.Status.PeerKind != kuryrv1.PeerKindAddressGroups },
		lock:   func(key string) string { return key },
		ensure: r.peerGroup,
		remove: func(ctx context.Context, id string) (bool, error) {
			if busy, err := portgroups.GroupOnPorts(ctx, r.Client, id); err != nil || busy {
				return false, err
			}
			err := r.Neutron.DeleteSecurityGroup(ctx, id)
			if neutron.InUse(err) {
				return false, nil // on a port still
			}
			return err == nil, err
		},
	}
}

func (r *GroupReconciler) addressPeers() peerKind {
	return peerKind{
		what:   "peer address groups",
		field:  func(k *kuryrv1.KuryrNetworkPolicy) *map[string]string { return &k.Status.PeerAddressGroups },
		named:  func(k *kuryrv1.KuryrNetworkPolicy) bool { return k.Status.PeerKind == kuryrv1.PeerKindAddressGroups },
		lock:   func(key string) string { return "ag/" + key },
		ensure: r.peerAddressGroup,
		remove: func(ctx context.Context, id string) (bool, error) {
			err := r.Neutron.DeleteAddressGroup(ctx, id)
			if neutron.InUse(err) {
				return false, nil // a rule of another policy still names it
			}
			return err == nil, err
		},
	}
}

// ensurePeers gives every peer of the spec its group of the kind
// (several at once) and returns their ids by peer key, with those of the
// peers the spec no longer names (kept until released). It records
// nothing.
func (r *GroupReconciler) ensurePeers(ctx context.Context, knp *kuryrv1.KuryrNetworkPolicy, k peerKind) (map[string]string, error) {
	var mu sync.Mutex
	groups := maps.Clone(k.groups(knp))
	if groups == nil {
		groups = map[string]string{}
	}
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(neutronCalls)
	for _, pp := range knp.Spec.Peers {
		recorded := k.groups(knp)[pp.Key]
		g.Go(func() error {
			id, err := k.ensure(ctx, pp, recorded)
			if err != nil {
				return err
			}
			mu.Lock()
			defer mu.Unlock()
			groups[pp.Key] = id
			return nil
		})
	}
	return groups, g.Wait()
}

// release drops the policy's peers of a kind that it no longer names (all
// of them with all). A group is deleted unless (inMode: peers are of this
// kind) another live policy names the peer and keeps the group, or
// (leaving the kind) another policy's rules still name it. pending: a
// group is still in use (the KuryrPort reconciler is taking a security
// group off the ports, or a rule names an address group); retry shortly.
func (r *GroupReconciler) release(ctx context.Context, knp *kuryrv1.KuryrNetworkPolicy, k peerKind, all, inMode bool) (pending bool, err error) {
	left := maps.Clone(k.groups(knp))
	for key, id := range k.groups(knp) {
		if !all && namesPeer(knp, key) {
			continue
		}
		done, err := r.releaseOne(ctx, knp, k, key, id, inMode)
		if err != nil {
			return false, err
		}
		if !done {
			pending = true
			continue
		}
		delete(left, key)
	}
	if len(left) == 0 {
		left = nil
	}
	return pending, r.record(ctx, knp, k, left)
}

func (r *GroupReconciler) releaseOne(ctx context.Context, knp *kuryrv1.KuryrNetworkPolicy, k peerKind, key, id string, inMode bool) (bool, error) {
	defer r.Locks.lock(k.lock(key))()
	var knps kuryrv1.KuryrNetworkPolicyList
	if err := r.List(ctx, &knps, client.UnsafeDisableDeepCopy); err != nil {
		return false, fmt.Errorf("list KuryrNetworkPolicies: %w", err)
	}
	for i := range knps.Items {
		other := &knps.Items[i]
		if other.UID == knp.UID || !other.DeletionTimestamp.IsZero() {
			continue
		}
		switch {
		case inMode && namesPeer(other, key):
			return true, nil
		case !inMode && k.groups(other)[key] == id && k.named(other):
			return false, nil
		}
	}
	return k.remove(ctx, id)
}

// record writes the policy's peers of a kind, if they changed.
func (r *GroupReconciler) record(ctx context.Context, knp *kuryrv1.KuryrNetworkPolicy, k peerKind, groups map[string]string) error {
	if maps.Equal(groups, k.groups(knp)) {
		return nil
	}
	patch := client.MergeFrom(knp.DeepCopy())
	*k.field(knp) = groups
	if err := r.Status().Patch(ctx, knp, patch); err != nil {
		return fmt.Errorf("record %s: %w", k.what, err)
	}
	return nil
}

// sweep deletes an orphaned peer group of a kind for the sweep, under the
// peer's lock, unless a policy holds it now or a live one names the peer
// with peers of this kind. In use (on a port, named by a rule): the next
// sweep tries again.
func (r *GroupReconciler) sweep(ctx context.Context, k peerKind, key, id string) error {
	defer r.Locks.lock(k.lock(key))()
	var knps kuryrv1.KuryrNetworkPolicyList
	if err := r.List(ctx, &knps, client.UnsafeDisableDeepCopy); err != nil {
		return fmt.Errorf("list KuryrNetworkPolicies: %w", err)
	}
	for i := range knps.Items {
		p := &knps.Items[i]
		if k.groups(p)[key] == id || (p.DeletionTimestamp.IsZero() && namesPeer(p, key) && k.named(p)) {
			return nil
		}
	}
	_, err := k.remove(ctx, id)
	return err
}
