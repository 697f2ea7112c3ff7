package kit

import (
	"context"
	"errors"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// ConflictRetry is how soon an object whose write lost a race is looked at
// again, doubled for each conflict in a row; after ConflictsQuiet such
// retries (200 ms to 3.2 s, 6.2 s in all), the conflict is returned as an
// error (the queue's backoff, an error log and metric).
const (
	ConflictRetry  = 200 * time.Millisecond
	ConflictsQuiet = 5
)

// RetryConflicts wraps a reconciler: a write that lost an optimistic-lock
// race (409 Conflict: the object changed since it was read, e.g. the
// activity watcher or a group write updated a KuryrPort meanwhile) is
// retried after ConflictRetry (doubling while it comes back), reading the
// object again, without being
// logged as a reconciler error with a stack trace. An error that joins a
// conflict with others, and a conflict that keeps coming back, pass
// through as any other error.
func RetryConflicts(r reconcile.Reconciler) reconcile.Reconciler {
	var mu sync.Mutex
	inARow := map[reconcile.Request]int{}
	return reconcile.Func(func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
		res, err := r.Reconcile(ctx, req)
		mu.Lock()
		defer mu.Unlock()
		if !onlyConflict(err) || inARow[req] >= ConflictsQuiet {
			delete(inARow, req)
			return res, err
		}
		wait := ConflictRetry << inARow[req]
		inARow[req]++
		log.FromContext(ctx).V(1).Info("the object changed while it was written: retrying", "reason", err.Error(),
			"retryIn", wait.String())
		return reconcile.Result{RequeueAfter: wait}, nil
	})
}

// onlyConflict says err is a conflict, possibly wrapped, joined with no
// other error.
func onlyConflict(err error) bool {
	if err == nil || !apierrors.IsConflict(err) {
		return false
	}
	for ; err != nil; err = errors.Unwrap(err) {
		if _, joined := err.(interface{ Unwrap() []error }); joined {
			return false
		}
	}
	return true
}
