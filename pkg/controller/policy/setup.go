package policy

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kuryrv1 "github.com/kuryr-k8s/kuryr/api/v1"
	"github.com/kuryr-k8s/kuryr/pkg/controller/kit"
)

// SetupWithManager registers the NetworkPolicy reconciler.
func (r *SpecReconciler) SetupWithManager(mgr ctrl.Manager, workers int) error {
	c := mgr.GetClient()
	return kit.Controller(ctrl.NewControllerManagedBy(mgr).
		Named("networkpolicy").
		For(&networkingv1.NetworkPolicy{}, builder.WithPredicates(kit.SpecOrResync)).
		Owns(&kuryrv1.KuryrNetworkPolicy{}, builder.WithPredicates(kit.SpecOrResync)).
		Watches(&corev1.Pod{}, onChange(policiesReadingPods(c), labelsOrIPsChanged)).
		Watches(&corev1.Namespace{}, onChange(policiesReadingPods(c), labelsChanged)).
		Watches(&kuryrv1.KuryrLoadBalancer{}, onChange(policiesReadingPods(c), generationChanged)), workers).
		Complete(kit.RetryConflicts(r))
}

// SetupWithManager registers the KuryrNetworkPolicy reconciler: its
// Neutron objects depend on its spec, and the address groups of its peers
// on the peers' pods' KuryrPorts and labels.
func (r *GroupReconciler) SetupWithManager(mgr ctrl.Manager, workers int) error {
	c := mgr.GetClient()
	inMode := func() bool {
		if r.Mode == nil {
			return false
		}
		use, _ := r.Mode.AddressGroups()
		return use
	}
	members := policiesOfMembers(c, inMode)
	b := ctrl.NewControllerManagedBy(mgr).
		Named("kuryrnetworkpolicy").
		For(&kuryrv1.KuryrNetworkPolicy{}, builder.WithPredicates(kit.SpecOrResync)).
		Watches(&kuryrv1.KuryrPort{}, onChange(members, addressesChanged)).
		Watches(&corev1.Pod{}, onChange(members, labelsChanged)).
		Watches(&corev1.Namespace{}, onChange(members, labelsChanged))
	if m, ok := r.Mode.(ModeChanges); ok {
		b = b.WatchesRawSource(modeSource(c, m))
	}
	return kit.Controller(b, workers).Complete(kit.RetryConflicts(r))
}

// labelsOrIPsChanged: the rules towards Service VIPs count a member as a
// pod only at that pod's own addresses.
func labelsOrIPsChanged(old, new client.Object) bool {
	if labelsChanged(old, new) {
		return true
	}
	o, okO := old.(*corev1.Pod)
	n, okN := new.(*corev1.Pod)
	return okO && okN && !slices.Equal(o.Status.PodIPs, n.Status.PodIPs)
}

func generationChanged(old, new client.Object) bool {
	return old.GetGeneration() != new.GetGeneration()
}
