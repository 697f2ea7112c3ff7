package kit

import (
	"context"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// ConflictRetry is how soon an object whose write lost a race is looked at
// again.
const ConflictRetry = 200 * time.Millisecond

// RetryConflicts wraps a reconciler: a write that lost an optimistic-lock
// race (409 Conflict: the object changed since it was read) is retried
// after ConflictRetry, reading the object again, without being logged as a
// reconciler error with a stack trace: it is expected whenever two writers
// (the pod and port controllers, a user) meet. Other errors pass through.
func RetryConflicts(r reconcile.Reconciler) reconcile.Reconciler {
	return reconcile.Func(func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
		res, err := r.Reconcile(ctx, req)
		if err == nil || !apierrors.IsConflict(err) {
			return res, err
		}
		log.FromContext(ctx).V(1).Info("the object changed while it was written: retrying", "reason", err.Error())
		return reconcile.Result{RequeueAfter: ConflictRetry}, nil
	})
}
