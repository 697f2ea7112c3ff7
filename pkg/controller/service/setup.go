package service

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	kuryrv1 "github.com/kuryr-k8s/kuryr/api/v1"
	"github.com/kuryr-k8s/kuryr/pkg/controller/kit"
)

// SetupWithManager watches Services, their EndpointSlices (by the
// kubernetes.io/service-name label) and the KuryrLoadBalancers they own.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, workers int) error {
	return kit.Controller(ctrl.NewControllerManagedBy(mgr).
		Named("service").
		// Every Service event: a reconcile reads only the cache and writes
		// only when the spec it computes changed.
		For(&corev1.Service{}).
		Owns(&kuryrv1.KuryrLoadBalancer{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&discoveryv1.EndpointSlice{}, handler.EnqueueRequestsFromMapFunc(sliceService)), workers).
		Complete(kit.RetryConflicts(r))
}

func sliceService(_ context.Context, o client.Object) []reconcile.Request {
	name := o.GetLabels()[discoveryv1.LabelServiceName]
	if name == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: o.GetNamespace(), Name: name}}}
}
