package kuryrnetwork

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	kuryrv1 "github.com/kuryr-k8s/kuryr/api/v1"
	"github.com/kuryr-k8s/kuryr/pkg/controller/kit"
)

// Nodes gives every node a KuryrNetwork (pod_subnets_driver = node), from
// which Reconciler makes the node's network. It only ever creates them:
// the Node owns its KuryrNetwork, so the garbage collector deletes it when
// the node goes, even while kuryr is down, and its finalizer then removes
// the network once the node's ports are gone.
type Nodes struct {
	client.Client
	// Namespace holds the nodes' KuryrNetworks (the controller's own,
	// [kubernetes] controller_ha_namespace).
	Namespace string
	ProjectID string
}

// ForNode is the KuryrNetwork of a node. Pure. It carries the finalizer from
// the start, so that no network is made that its deletion could skip.
func ForNode(node *corev1.Node, namespace, project string) *kuryrv1.KuryrNetwork {
	yes := true
	return &kuryrv1.KuryrNetwork{
		ObjectMeta: metav1.ObjectMeta{
			Name: kuryrv1.NodeNetworkName(node.Name), Namespace: namespace,
			Finalizers: []string{kuryrv1.KuryrNetworkFinalizer},
			// A namespaced object may be owned by a cluster-scoped one.
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: node.Name, UID: node.UID, Controller: &yes}},
		},
		Spec: kuryrv1.KuryrNetworkSpec{NodeName: node.Name, ProjectID: project},
	}
}

// Reconcile makes sure the node named by req has its KuryrNetwork. One
// that exists is left as it is, even if it belongs to an earlier node of
// the same name: the garbage collector deletes that one, and its deletion
// brings the new node back here.
func (r *Nodes) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var node corev1.Node
	if err := r.Get(ctx, req.NamespacedName, &node); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !node.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil
	}
	want := ForNode(&node, r.Namespace, r.ProjectID)
	var kn kuryrv1.KuryrNetwork
	err := r.Get(ctx, types.NamespacedName{Namespace: want.Namespace, Name: want.Name}, &kn)
	if !apierrors.IsNotFound(err) {
		return ctrl.Result{}, err
	}
	err = r.Create(ctx, want)
	if apierrors.IsAlreadyExists(err) {
		return ctrl.Result{}, nil // our cache was behind
	}
	if err != nil {
		return ctrl.Result{}, fmt.Errorf("create KuryrNetwork for node %s: %w", node.Name, err)
	}
	log.FromContext(ctx).Info("node network requested", "node", node.Name, "kuryrNetwork", want.Namespace+"/"+want.Name)
	return ctrl.Result{}, nil
}

// SetupWithManager watches nodes (not their status updates) and the
// deletion of their KuryrNetworks.
func (r *Nodes) SetupWithManager(mgr ctrl.Manager) error {
	deleted := predicate.Funcs{
		CreateFunc:  func(event.CreateEvent) bool { return false },
		UpdateFunc:  func(event.UpdateEvent) bool { return false },
		GenericFunc: func(event.GenericEvent) bool { return false },
	}
	return kit.Controller(ctrl.NewControllerManagedBy(mgr).
		Named("nodenetwork").
		For(&corev1.Node{}, builder.WithPredicates(kit.SpecOrResync)).
		Owns(&kuryrv1.KuryrNetwork{}, builder.WithPredicates(deleted)), 2).
		Complete(kit.RetryConflicts(r))
}
