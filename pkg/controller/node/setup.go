package node

import (
	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	kuryrv1 "github.com/kuryr-k8s/kuryr/api/v1"
	"github.com/kuryr-k8s/kuryr/pkg/controller/kit"
)

// SetupWithManager watches nodes appearing and going, and changes of the
// annotations (not their frequent status updates).
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	annotation := predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			for _, k := range []string{kuryrv1.NodePortAnnotation, kuryrv1.RefusePortAnnotation} {
				if e.ObjectOld.GetAnnotations()[k] != e.ObjectNew.GetAnnotations()[k] {
					return true
				}
			}
			return !e.ObjectNew.GetDeletionTimestamp().IsZero()
		},
	}
	return kit.Controller(ctrl.NewControllerManagedBy(mgr).
		Named("node").
		For(&corev1.Node{}, builder.WithPredicates(annotation)), 2).
		Complete(kit.RetryConflicts(r))
}
