package loadbalancer

import (
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"

	kuryrv1 "github.com/kuryr-k8s/kuryr/api/v1"
	"github.com/kuryr-k8s/kuryr/pkg/controller/kit"
)

// SetupWithManager registers the reconciler; workers bounds concurrent
// Octavia conversations.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, workers int) error {
	return kit.Controller(ctrl.NewControllerManagedBy(mgr).
		Named("kuryrloadbalancer").
		For(&kuryrv1.KuryrLoadBalancer{}, builder.WithPredicates(kit.SpecOrResync)), workers).
		Complete(kit.RetryConflicts(r))
}
