package policy

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"

	kuryrv1 "github.com/kuryr-k8s/kuryr/api/v1"
	"github.com/kuryr-k8s/kuryr/pkg/controller/kit"
)

// SpecReconciler keeps one KuryrNetworkPolicy per NetworkPolicy, its spec
// the policy as kuryr computes it. It is the only writer of that spec; it
// talks to no OpenStack service.
type SpecReconciler struct {
	client.Client
	Recorder kit.Recorder
}

// Reconcile writes the KuryrNetworkPolicy of a NetworkPolicy, or deletes
// it once the policy is gone.
func (r *SpecReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var np networkingv1.NetworkPolicy
	err := r.Get(ctx, req.NamespacedName, &np)
	if apierrors.IsNotFound(err) || (err == nil && !np.DeletionTimestamp.IsZero()) {
		return ctrl.Result{}, r.deleteKNP(ctx, req.NamespacedName.Namespace, req.NamespacedName.Name, "")
	}
	if err != nil {
		return ctrl.Result{}, err
	}
	view, err := readView(ctx, r)
	if err != nil {
		return ctrl.Result{}, err
	}
	var klbs kuryrv1.KuryrLoadBalancerList
	if err := r.List(ctx, &klbs, client.UnsafeDisableDeepCopy); err != nil {
		return ctrl.Result{}, fmt.Errorf("list KuryrLoadBalancers: %w", err)
	}
	d := Translate(&np, NamedPortsIn(&np, view))
	spec := SpecOf(&np, d)
	spec.Rules = append(spec.Rules, ServiceRules(d, klbs.Items, view)...)
	return ctrl.Result{}, r.write(ctx, &np, spec, d.Warnings)
}

// write creates or updates the KuryrNetworkPolicy; one left by an earlier
// policy of the same name is deleted first (its groups are that policy's).
func (r *SpecReconciler) write(ctx context.Context, np *networkingv1.NetworkPolicy, spec kuryrv1.KuryrNetworkPolicySpec, warnings []string) error {
	var knp kuryrv1.KuryrNetworkPolicy
	err := r.Get(ctx, client.ObjectKeyFromObject(np), &knp)
	switch {
	case apierrors.IsNotFound(err):
		knp = kuryrv1.KuryrNetworkPolicy{ObjectMeta: metav1.ObjectMeta{Name: np.Name, Namespace: np.Namespace,
			Finalizers: []string{kuryrv1.KuryrNetworkPolicyFinalizer}}, Spec: spec}
		if err := controllerutil.SetControllerReference(np, &knp, r.Scheme()); err != nil {
			return fmt.Errorf("own KuryrNetworkPolicy: %w", err)
		}
		if err := r.Create(ctx, &knp); err != nil {
			return fmt.Errorf("create KuryrNetworkPolicy %s/%s: %w", np.Namespace, np.Name, err)
		}
		r.warn(np, warnings)
		return nil
	case err != nil:
		return err
	case !metav1.IsControlledBy(&knp, np):
		// Requeued by the deletion.
		return r.deleteKNP(ctx, np.Namespace, np.Name, knp.UID)
	case apiequality.Semantic.DeepEqual(knp.Spec, spec):
		return nil
	}
	patch := client.MergeFromWithOptions(knp.DeepCopy(), client.MergeFromWithOptimisticLock{})
	knp.Spec = spec
	if err := r.Patch(ctx, &knp, patch); err != nil {
		return fmt.Errorf("update KuryrNetworkPolicy %s/%s: %w", np.Namespace, np.Name, err)
	}
	r.warn(np, warnings)
	log.FromContext(ctx).V(1).Info("policy changed", "rules", len(spec.Rules), "peers", len(spec.Peers))
	return nil
}

func (r *SpecReconciler) warn(np *networkingv1.NetworkPolicy, warnings []string) {
	if len(warnings) > 0 {
		r.Recorder.Eventf(np, nil, corev1.EventTypeWarning, "PartlyEmpty", "Translate", "%s", strings.Join(warnings, "; "))
	}
}

// deleteKNP deletes the KuryrNetworkPolicy of that name (only the one with
// that UID, when given); its finalizer takes its groups away.
func (r *SpecReconciler) deleteKNP(ctx context.Context, ns, name string, uid types.UID) error {
	knp := &kuryrv1.KuryrNetworkPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	var opts []client.DeleteOption
	if uid != "" {
		opts = append(opts, client.Preconditions{UID: &uid})
	}
	if err := r.Delete(ctx, knp, opts...); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete KuryrNetworkPolicy %s/%s: %w", ns, name, err)
	}
	return nil
}
