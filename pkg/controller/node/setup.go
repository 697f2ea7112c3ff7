package node

import (
	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	kuryrv1 "github.com/kuryr-k8s/kuryr/api/v1"
	"github.com/kuryr-k8s/kuryr/pkg/controller/kit"
)

// SetupWithManager watches nodes appearing and going, changes of the
// annotations and of readiness (not their other status updates), and the
// nodes' ports disappearing from Neutron (verify.go).
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	annotation := predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			for _, k := range []string{kuryrv1.NodePortAnnotation, kuryrv1.RefusePortAnnotation} {
				if e.ObjectOld.GetAnnotations()[k] != e.ObjectNew.GetAnnotations()[k] {
					return true
				}
			}
			if readiness(e.ObjectOld) != readiness(e.ObjectNew) {
				return true
			}
			return !e.ObjectNew.GetDeletionTimestamp().IsZero()
		},
	}
	return kit.Controller(ctrl.NewControllerManagedBy(mgr).
		Named("node").
		For(&corev1.Node{}, builder.WithPredicates(annotation)).
		WatchesRawSource(r.verifySource(verifyPeriod)), 2).
		Complete(kit.RetryConflicts(r))
}

// readiness is the node's Ready condition status ("" if none).
func readiness(o client.Object) corev1.ConditionStatus {
	n, ok := o.(*corev1.Node)
	if !ok {
		return ""
	}
	if c := readyCondition(n); c != nil {
		return c.Status
	}
	return ""
}

// readyCondition is the node's Ready condition, nil if none.
func readyCondition(n *corev1.Node) *corev1.NodeCondition {
	for i := range n.Status.Conditions {
		if n.Status.Conditions[i].Type == corev1.NodeReady {
			return &n.Status.Conditions[i]
		}
	}
	return nil
}
