package kuryrnetwork

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"

	kuryrv1 "github.com/kuryr-k8s/kuryr/api/v1"
	"github.com/kuryr-k8s/kuryr/pkg/controller/kit"
	"github.com/kuryr-k8s/kuryr/pkg/names"
)

// owner is whose pods a KuryrNetwork's network serves: a namespace's or a
// node's.
type owner struct {
	kind, name string         // "namespace" or "node", and its name (log keys)
	network    string         // the Neutron network's and subnet's name
	tags       []string       // the network's and subnet's tags
	regarding  runtime.Object // what Warning Events are about
}

// ownerOf is the owner of kn. Pure.
func ownerOf(kn *kuryrv1.KuryrNetwork, s Settings) owner {
	tag := func(t string) []string {
		return append([]string{names.ClusterTag(s.Cluster), t}, s.ExtraTags...)
	}
	if node := kn.Spec.NodeName; node != "" {
		return owner{kind: "node", name: node, network: names.NodeNetworkName(s.Cluster, node), tags: tag(names.NodeNetworkTag(node)),
			regarding: &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node}}}
	}
	ns := kn.Spec.NsName
	return owner{kind: "namespace", name: ns, network: names.NetworkName(s.Cluster, ns), tags: tag(names.NamespaceTag(ns)),
		regarding: &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}}
}

// finalize detaches and deletes the network once no port uses it: the
// ports of the namespace's or node's pods go with their KuryrPorts, and
// until then the network stays attached, so that pods still terminating
// keep their routes. A port created meanwhile makes Neutron refuse the
// delete (409), which is retried.
func (r *Reconciler) finalize(ctx context.Context, kn *kuryrv1.KuryrNetwork) (ctrl.Result, error) {
	if !controllerutil.ContainsFinalizer(kn, kuryrv1.KuryrNetworkFinalizer) {
		return ctrl.Result{}, nil
	}
	orig := kn.DeepCopy()
	o := ownerOf(kn, r.Settings)
	if kept, err := r.keepForLiveNode(ctx, kn); err != nil || kept {
		return ctrl.Result{}, err
	}
	netID := kn.Status.NetID
	if netID == "" {
		// Created before a crash, never recorded: find it by name.
		net, err := r.Neutron.FindNetwork(ctx, o.network, kn.Spec.ProjectID)
		if err != nil {
			return ctrl.Result{}, r.fail(ctx, kn, orig, "DeleteNetwork", err)
		}
		if net != nil {
			netID = net.ID
			if len(net.Subnets) > 0 {
				kn.Status.SubnetID = net.Subnets[0]
			}
		}
	}
	if netID != "" {
		users, err := r.Neutron.NetworkUsers(ctx, netID)
		if err != nil {
			return ctrl.Result{}, r.fail(ctx, kn, orig, "DeleteNetwork", err)
		}
		if len(users) > 0 {
			return ctrl.Result{RequeueAfter: usersRecheck}, r.waitForUsers(ctx, kn, orig, len(users))
		}
	}
	if kn.Status.SubnetID != "" {
		if err := r.Neutron.RemoveRouterInterface(ctx, r.Settings.Router, kn.Status.SubnetID); err != nil {
			return ctrl.Result{}, r.fail(ctx, kn, orig, "DetachRouter", err)
		}
	}
	if netID != "" {
		if err := r.Neutron.DeleteNetwork(ctx, netID); err != nil {
			return ctrl.Result{}, r.fail(ctx, kn, orig, "DeleteNetwork", err)
		}
	}
	if err := kit.RemoveFinalizer(ctx, r.Client, kn, kuryrv1.KuryrNetworkFinalizer); err != nil {
		return ctrl.Result{}, err
	}
	log.FromContext(ctx).Info(o.kind+" network deleted", o.kind, o.name, "network", netID)
	return ctrl.Result{}, nil
}

// keepForLiveNode releases, in node mode, the KuryrNetwork of a node that
// exists (read from the API server: the cache may still show a node just
// deleted) without touching its network: the node's pods use it, Nodes
// makes the node a new KuryrNetwork at once, and that one finds the
// network again by name. This is what happens when a Node is deleted and
// registered again under its name before its pods are gone: the garbage
// collector deletes the KuryrNetwork of the old Node, whose network could
// not go while those pods run, and the new node's pods would wait for
// ever behind it.
func (r *Reconciler) keepForLiveNode(ctx context.Context, kn *kuryrv1.KuryrNetwork) (bool, error) {
	if kn.Spec.NodeName == "" || !r.Settings.Nodes {
		return false, nil
	}
	reader := r.APIReader
	if reader == nil {
		reader = r.Client
	}
	var node corev1.Node
	err := reader.Get(ctx, client.ObjectKey{Name: kn.Spec.NodeName}, &node)
	if apierrors.IsNotFound(err) || (err == nil && !node.DeletionTimestamp.IsZero()) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("read node %s: %w", kn.Spec.NodeName, err)
	}
	if err := kit.RemoveFinalizer(ctx, r.Client, kn, kuryrv1.KuryrNetworkFinalizer); err != nil {
		return true, err
	}
	log.FromContext(ctx).Info("node network kept for the live node of that name", "node", kn.Spec.NodeName, "network", kn.Status.NetID)
	return true, nil
}

// waitForUsers says on the KuryrNetwork why its network is still there.
func (r *Reconciler) waitForUsers(ctx context.Context, kn, orig *kuryrv1.KuryrNetwork, n int) error {
	if !meta.SetStatusCondition(&kn.Status.Conditions, metav1.Condition{
		Type: kuryrv1.ConditionReady, Status: metav1.ConditionFalse, Reason: kuryrv1.ReasonWaiting,
		Message: fmt.Sprintf("deleting: %d ports are still on the network", n),
	}) {
		return nil
	}
	if err := r.Status().Patch(ctx, kn, client.MergeFrom(orig)); err != nil {
		return client.IgnoreNotFound(err)
	}
	return nil
}
