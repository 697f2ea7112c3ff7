package policy

import (
	"context"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	kuryrv1 "github.com/kuryr-k8s/kuryr/api/v1"
	"github.com/kuryr-k8s/kuryr/pkg/controller/kit"
)

type queue = workqueue.TypedRateLimitingInterface[reconcile.Request]

// onChange enqueues what keys(old, new) names, for creations, deletions
// and the updates changed says matter.
func onChange(keys func(ctx context.Context, objs ...client.Object) []reconcile.Request,
	changed func(old, new client.Object) bool) handler.EventHandler {
	add := func(ctx context.Context, q queue, objs ...client.Object) {
		for _, r := range keys(ctx, objs...) {
			q.Add(r)
		}
	}
	return handler.TypedFuncs[client.Object, reconcile.Request]{
		CreateFunc: func(ctx context.Context, e event.TypedCreateEvent[client.Object], q queue) { add(ctx, q, e.Object) },
		UpdateFunc: func(ctx context.Context, e event.TypedUpdateEvent[client.Object], q queue) {
			if changed(e.ObjectOld, e.ObjectNew) {
				add(ctx, q, e.ObjectOld, e.ObjectNew)
			}
		},
		DeleteFunc: func(ctx context.Context, e event.TypedDeleteEvent[client.Object], q queue) { add(ctx, q, e.Object) },
	}
}

func labelsChanged(old, new client.Object) bool { return !maps.Equal(old.GetLabels(), new.GetLabels()) }

func always(_, _ client.Object) bool { return true }

// groupsChanged: what pods' groups read of a KuryrNetworkPolicy (its
// selectors and peers, its group, its peers' groups and their kind, its
// deletion), not its conditions.
func groupsChanged(old, new client.Object) bool {
	o, n := old.(*kuryrv1.KuryrNetworkPolicy), new.(*kuryrv1.KuryrNetworkPolicy)
	return o.Generation != n.Generation || o.Status.SecurityGroupID != n.Status.SecurityGroupID ||
		!maps.Equal(o.Status.PeerGroups, n.Status.PeerGroups) || o.Status.PeerKind != n.Status.PeerKind ||
		!o.DeletionTimestamp.Equal(n.DeletionTimestamp)
}

func request(ns, name string) reconcile.Request {
	return reconcile.Request{NamespacedName: types.NamespacedName{Namespace: ns, Name: name}}
}

// PortWatches are what changes a pod's policy groups, for the KuryrPort
// reconciler: the pod's labels, its namespace's labels (peers choose
// namespaces by them), the policies of its namespace, and the
// KuryrNetworkPolicies whose pods or peers include it.
func PortWatches(c client.Reader) []kit.Watch {
	samePod := func(_ context.Context, objs ...client.Object) []reconcile.Request {
		var out []reconcile.Request
		for _, o := range objs {
			out = append(out, request(o.GetNamespace(), o.GetName()))
		}
		return out
	}
	namespacePorts := func(ctx context.Context, objs ...client.Object) []reconcile.Request {
		var namespaces []string
		for _, o := range objs {
			if ns, ok := o.(*corev1.Namespace); ok {
				namespaces = append(namespaces, ns.Name)
			} else {
				namespaces = append(namespaces, o.GetNamespace())
			}
		}
		return portsIn(ctx, c, namespaces)
	}
	return []kit.Watch{
		{Object: &corev1.Pod{}, Handler: onChange(samePod, labelsChanged)},
		{Object: &corev1.Namespace{}, Handler: onChange(namespacePorts, labelsChanged)},
		{Object: &networkingv1.NetworkPolicy{}, Handler: onChange(namespacePorts, always)},
		{Object: &kuryrv1.KuryrNetworkPolicy{}, Handler: onChange(podsOfPolicies(c), groupsChanged)},
	}
}

// portsIn names the KuryrPorts of the namespaces.
func portsIn(ctx context.Context, c client.Reader, namespaces []string) []reconcile.Request {
	slices.Sort(namespaces)
	var out []reconcile.Request
	for _, ns := range slices.Compact(namespaces) {
		var kps kuryrv1.KuryrPortList
		if err := c.List(ctx, &kps, client.InNamespace(ns), client.UnsafeDisableDeepCopy); err != nil {
			log.FromContext(ctx).Error(err, "list KuryrPorts", "namespace", ns)
			continue
		}
		for _, kp := range kps.Items {
			out = append(out, request(kp.Namespace, kp.Name))
		}
	}
	return out
}

// podsOfPolicies names the KuryrPorts of the pods a KuryrNetworkPolicy
// selects or one of its peers matches (their groups include the policy's
// group or a peer group).
func podsOfPolicies(c client.Reader) func(ctx context.Context, objs ...client.Object) []reconcile.Request {
	return func(ctx context.Context, objs ...client.Object) []reconcile.Request {
		view, err := readView(ctx, c)
		if err != nil {
			log.FromContext(ctx).Error(err, "read pods for a KuryrNetworkPolicy change")
			return nil
		}
		var out []reconcile.Request
		for i := range view.Pods {
			pod := &view.Pods[i]
			p := Pod{Namespace: pod.Namespace, Labels: pod.Labels}
			for _, o := range objs {
				knp := o.(*kuryrv1.KuryrNetworkPolicy)
				if concerns(knp, p, view.NamespaceLabels[pod.Namespace]) {
					out = append(out, request(pod.Namespace, pod.Name))
					break
				}
			}
		}
		return out
	}
}

// concerns says whether a pod's groups depend on the policy: it selects
// the pod, or one of its peers matches it.
func concerns(knp *kuryrv1.KuryrNetworkPolicy, p Pod, nsLabels map[string]string) bool {
	if knp.Namespace == p.Namespace && selector(&knp.Spec.PodSelector).Matches(labels.Set(p.Labels)) {
		return true
	}
	for _, pp := range knp.Spec.Peers {
		if peerOf(pp).Matches(p, nsLabels) {
			return true
		}
	}
	return false
}

// policiesReadingPods returns the NetworkPolicies whose translation reads
// other objects than themselves: named ports (resolved over pods) and
// egress peers (whose Services' VIPs they admit).
func policiesReadingPods(c client.Reader) func(ctx context.Context, objs ...client.Object) []reconcile.Request {
	return func(ctx context.Context, _ ...client.Object) []reconcile.Request {
		var nps networkingv1.NetworkPolicyList
		if err := c.List(ctx, &nps, client.UnsafeDisableDeepCopy); err != nil {
			log.FromContext(ctx).Error(err, "list NetworkPolicies")
			return nil
		}
		var out []reconcile.Request
		for i := range nps.Items {
			if readsPods(&nps.Items[i]) {
				out = append(out, request(nps.Items[i].Namespace, nps.Items[i].Name))
			}
		}
		return out
	}
}

// readsPods: the policy names a port by name, or has an egress peer.
func readsPods(np *networkingv1.NetworkPolicy) bool {
	for _, in := range np.Spec.Ingress {
		if namedPort(in.Ports) {
			return true
		}
	}
	for _, out := range np.Spec.Egress {
		if namedPort(out.Ports) || slices.ContainsFunc(out.To, func(p networkingv1.NetworkPolicyPeer) bool { return p.IPBlock == nil }) {
			return true
		}
	}
	return false
}

func namedPort(ports []networkingv1.NetworkPolicyPort) bool {
	return slices.ContainsFunc(ports, func(p networkingv1.NetworkPolicyPort) bool { return p.Port != nil && p.Port.StrVal != "" })
}
