package loadbalancer

import (
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	kuryrv1 "github.com/kuryr-k8s/kuryr/api/v1"
	"github.com/kuryr-k8s/kuryr/pkg/controller/kuryrport"
)

// specOrResync passes spec changes (and deletion, which bumps the
// generation) and the periodic resync, not the reconciler's own status
// writes.
var specOrResync = predicate.Funcs{
	UpdateFunc: func(e event.UpdateEvent) bool {
		return e.ObjectOld.GetGeneration() != e.ObjectNew.GetGeneration() ||
			e.ObjectOld.GetResourceVersion() == e.ObjectNew.GetResourceVersion() ||
			!e.ObjectNew.GetDeletionTimestamp().IsZero()
	},
}

// SetupWithManager registers the reconciler; workers bounds concurrent
// Octavia conversations.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, workers int) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named("kuryrloadbalancer").
		For(&kuryrv1.KuryrLoadBalancer{}, builder.WithPredicates(specOrResync)).
		WithOptions(controller.Options{MaxConcurrentReconciles: workers, RateLimiter: kuryrport.RateLimiter()}).
		Complete(r)
}
