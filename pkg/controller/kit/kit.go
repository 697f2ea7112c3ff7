// Package kit holds what every kuryr reconciler uses: the Event recorder,
// the work queue's rate limiter, the predicates and extra watches, one way
// to report a failure (Ready=False and a Warning Event) and one to add and
// remove a finalizer. It imports no controller package: each controller
// package imports it, and none imports another.
package kit

import (
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// Recorder emits Kubernetes Events (events.k8s.io).
type Recorder interface {
	Eventf(regarding, related runtime.Object, eventtype, reason, action, note string, args ...any)
}

// RateLimiter retries a failing object after 0.5 s, doubling up to 2 min:
// Neutron being down or a subnet being full must neither hot-loop nor wait
// for minutes once fixed.
func RateLimiter() workqueue.TypedRateLimiter[reconcile.Request] {
	return workqueue.NewTypedItemExponentialFailureRateLimiter[reconcile.Request](500*time.Millisecond, 2*time.Minute)
}

// SpecOrResync passes spec changes (and deletion, which bumps the
// generation) and the periodic resync, not a reconciler's own status
// writes.
var SpecOrResync = predicate.Funcs{
	UpdateFunc: func(e event.UpdateEvent) bool {
		return e.ObjectOld.GetGeneration() != e.ObjectNew.GetGeneration() ||
			e.ObjectOld.GetResourceVersion() == e.ObjectNew.GetResourceVersion() ||
			!e.ObjectNew.GetDeletionTimestamp().IsZero()
	},
}

// Watch is a further source of objects for a reconciler (for the KuryrPort
// reconciler: what the sources of a port's groups depend on).
type Watch struct {
	Object  client.Object
	Handler handler.EventHandler
}
