package kuryrport

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	kuryrv1 "github.com/kuryr-k8s/kuryr/api/v1"
	"github.com/kuryr-k8s/kuryr/pkg/controller/kit"
	"github.com/kuryr-k8s/kuryr/pkg/neutron"
)

// SetupWithManager registers the reconciler; workers bounds concurrent
// Neutron port creations.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, workers int) error {
	b := ctrl.NewControllerManagedBy(mgr).
		Named("kuryrport").
		For(&kuryrv1.KuryrPort{}).
		// A namespace's or node's network becoming ready unblocks its
		// KuryrPorts.
		Watches(&kuryrv1.KuryrNetwork{}, handler.EnqueueRequestsFromMapFunc(r.waitingOn))
	for _, w := range r.Watches {
		b = b.Watches(w.Object, w.Handler)
	}
	if r.Pool != nil {
		b = b.Watches(&corev1.Node{}, fillNewNodes(r.Pool))
	}
	return kit.Controller(b, workers).Complete(kit.RetryConflicts(r))
}

// fillNewNodes has the pool keep every node that appears filled (a node
// that joins the cluster gets its pool before its first pods, as the nodes
// there at start do); it enqueues nothing.
func fillNewNodes(p *Pool) handler.EventHandler {
	return handler.Funcs{CreateFunc: func(_ context.Context, e event.CreateEvent, _ workqueue.TypedRateLimitingInterface[reconcile.Request]) {
		p.Fill(e.Object.GetName())
	}}
}

// waitingOn are the KuryrPorts without a port that a KuryrNetwork serves:
// those of its namespace, or, for a node's, those of the pods on the node
// (labelled with it), in every namespace.
func (r *Reconciler) waitingOn(ctx context.Context, o client.Object) []reconcile.Request {
	var opt client.ListOption = client.InNamespace(o.GetNamespace())
	if kn, ok := o.(*kuryrv1.KuryrNetwork); ok && kn.Spec.NodeName != "" {
		opt = client.MatchingLabels{kuryrv1.NodeNameLabel: kn.Spec.NodeName}
	}
	var kps kuryrv1.KuryrPortList
	if err := r.List(ctx, &kps, opt); err != nil {
		return nil
	}
	var out []reconcile.Request
	for _, kp := range kps.Items {
		if _, done := kp.Status.DefaultVIF(); !done {
			out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: kp.Namespace, Name: kp.Name}})
		}
	}
	return out
}

// subnetReader is what DefaultTarget needs.
type subnetReader interface {
	Subnet(ctx context.Context, id string) (*neutron.Subnet, error)
}

// DefaultTarget puts every port on the one configured pod subnet.
func DefaultTarget(info subnetReader, subnetID string) TargetFunc {
	return func(ctx context.Context, _ *kuryrv1.KuryrPort) (Target, bool, error) {
		s, err := info.Subnet(ctx, subnetID)
		if err != nil {
			return Target{}, false, err
		}
		return Target{NetworkID: s.NetworkID, SubnetID: s.ID}, true, nil
	}
}

// NodeTargetFunc says which network and subnet the ports bound to a node
// go on; ok is false while that is not known (the node's network being
// created or removed). The pool asks it for each node it fills.
type NodeTargetFunc func(ctx context.Context, node string) (t Target, ok bool, err error)

// EveryNode is a target that depends on no pod or node (the default
// subnet), as the pool asks for it.
func EveryNode(f TargetFunc) NodeTargetFunc {
	return func(ctx context.Context, _ string) (Target, bool, error) { return f(ctx, nil) }
}

// NodeNetworks are the nodes' own networks (pod_subnets_driver = node):
// each node's, once the KuryrNetwork kuryrv1.NodeNetworkName(node) in
// namespace ns reports it ready, and not while it is being deleted (its
// network is going).
func NodeNetworks(c client.Reader, ns string) NodeTargetFunc {
	return func(ctx context.Context, node string) (Target, bool, error) {
		var kn kuryrv1.KuryrNetwork
		err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: kuryrv1.NodeNetworkName(node)}, &kn)
		if err != nil || !kn.Status.Ready() || !kn.DeletionTimestamp.IsZero() || kn.Spec.NodeName != node {
			return Target{}, false, client.IgnoreNotFound(err)
		}
		return Target{NetworkID: kn.Status.NetID, SubnetID: kn.Status.SubnetID}, true, nil
	}
}

// NodeTarget puts a port on the network of its pod's node (read from the
// KuryrNetworks in namespace ns), once that is ready: until then the
// KuryrPort waits, and the node's KuryrNetwork becoming ready wakes it.
func NodeTarget(c client.Reader, ns string) TargetFunc {
	nodes := NodeNetworks(c, ns)
	return func(ctx context.Context, kp *kuryrv1.KuryrPort) (Target, bool, error) {
		return nodes(ctx, kp.Spec.PodNodeName)
	}
}

// NamespaceTarget puts a port on its namespace's network, once the
// KuryrNetwork of that namespace reports it ready.
func NamespaceTarget(c client.Reader) TargetFunc {
	return func(ctx context.Context, kp *kuryrv1.KuryrPort) (Target, bool, error) {
		var kn kuryrv1.KuryrNetwork
		err := c.Get(ctx, types.NamespacedName{Namespace: kp.Namespace, Name: kp.Namespace}, &kn)
		if err != nil || !kn.Status.Ready() {
			return Target{}, false, client.IgnoreNotFound(err)
		}
		return Target{NetworkID: kn.Status.NetID, SubnetID: kn.Status.SubnetID}, true, nil
	}
}
