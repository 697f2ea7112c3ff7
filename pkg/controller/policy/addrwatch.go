package policy

import (
	"context"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	kuryrv1 "github.com/kuryr-k8s/kuryr/api/v1"
)

// What changes a peer's address group: a KuryrPort coming, going or
// getting its addresses, its pod's labels, and its namespace's labels.
// Each names the policies whose address-group peers match the pod before
// or after.

// addressesChanged: a KuryrPort's addresses or its deletion.
func addressesChanged(old, new client.Object) bool {
	o, n := old.(*kuryrv1.KuryrPort), new.(*kuryrv1.KuryrPort)
	return !slices.Equal(PortAddresses(o), PortAddresses(n)) || !o.DeletionTimestamp.Equal(n.DeletionTimestamp)
}

// policiesOfMembers names the KuryrNetworkPolicies with address-group
// peers (recorded, or to be made: inMode says peers are address groups)
// one of which matches a pod of objs (KuryrPorts, pods) or any pod of a
// namespace of objs.
func policiesOfMembers(c client.Reader, inMode func() bool) func(ctx context.Context, objs ...client.Object) []reconcile.Request {
	return func(ctx context.Context, objs ...client.Object) []reconcile.Request {
		var knps kuryrv1.KuryrNetworkPolicyList
		if err := c.List(ctx, &knps, client.UnsafeDisableDeepCopy); err != nil {
			log.FromContext(ctx).Error(err, "list KuryrNetworkPolicies for a change of peer addresses")
			return nil
		}
		var out []reconcile.Request
		mode := inMode()
		for i := range knps.Items {
			knp := &knps.Items[i]
			if len(knp.Status.PeerAddressGroups) == 0 && knp.Status.PeerKind != kuryrv1.PeerKindAddressGroups &&
				!(mode && len(knp.Spec.Peers) > 0) {
				continue
			}
			for _, o := range objs {
				if peersConcern(ctx, c, knp, o) {
					out = append(out, request(knp.Namespace, knp.Name))
					break
				}
			}
		}
		return out
	}
}

// peersConcern: a peer of the policy matches the pod o stands for (the
// pod of a KuryrPort, as the cache has it), or selects namespaces and o is
// a namespace.
func peersConcern(ctx context.Context, c client.Reader, knp *kuryrv1.KuryrNetworkPolicy, o client.Object) bool {
	if _, ok := o.(*corev1.Namespace); ok {
		return slices.ContainsFunc(knp.Spec.Peers, func(pp kuryrv1.PolicyPeer) bool { return pp.NamespaceSelector != nil })
	}
	p := Pod{Namespace: o.GetNamespace()}
	switch obj := o.(type) {
	case *corev1.Pod:
		p.Labels = obj.Labels
	case *kuryrv1.KuryrPort:
		var pod corev1.Pod
		if err := c.Get(ctx, types.NamespacedName{Namespace: obj.Namespace, Name: obj.Name}, &pod); err == nil &&
			string(pod.UID) == obj.Spec.PodUID {
			p.Labels = pod.Labels
		}
	}
	var ns corev1.Namespace
	if err := c.Get(ctx, types.NamespacedName{Name: p.Namespace}, &ns); err != nil {
		return true // cannot tell: look again
	}
	return slices.ContainsFunc(knp.Spec.Peers, func(pp kuryrv1.PolicyPeer) bool { return peerOf(pp).Matches(p, ns.Labels) })
}

// ModeChanges is implemented by a PeerMode that tells when its answer
// changes: every KuryrNetworkPolicy is looked at again then.
type ModeChanges interface {
	Changes() <-chan struct{}
}

// modeSource enqueues every KuryrNetworkPolicy whenever the mode changes.
func modeSource(c client.Reader, m ModeChanges) source.Source {
	return source.Func(func(ctx context.Context, q queue) error {
		go func() {
			for {
				select {
				case <-ctx.Done():
					return
				case <-m.Changes():
				}
				enqueueAll(ctx, c, q)
			}
		}()
		return nil
	})
}

// enqueueAll enqueues every KuryrNetworkPolicy, listing them again after a
// second until that succeeds (the change must not be lost).
func enqueueAll(ctx context.Context, c client.Reader, q queue) {
	for {
		var knps kuryrv1.KuryrNetworkPolicyList
		err := c.List(ctx, &knps)
		if err == nil {
			for _, k := range knps.Items {
				q.Add(request(k.Namespace, k.Name))
			}
			return
		}
		log.FromContext(ctx).Error(err, "list KuryrNetworkPolicies after the peer mode changed")
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Second):
		}
	}
}
