package kit

import (
	"context"
	"sync"
	"time"

	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/kuryr-k8s/kuryr/pkg/openstack"
)

// Retry is a controller's rate limiter (RateLimiter's backoff) that also
// knows which objects are waiting out their backoff: when an OpenStack
// service answers again after an outage (openstack.Health), they are
// queued at once. Without it, an object that failed through a minute's
// outage would wait up to another minute once the service is back.
type Retry struct {
	workqueue.TypedRateLimiter[reconcile.Request]
	mu      sync.Mutex
	waiting map[reconcile.Request]bool
	queue   workqueue.TypedRateLimitingInterface[reconcile.Request]
}

// NewRetry returns a Retry; Controller wires one into a controller.
func NewRetry() *Retry {
	return &Retry{TypedRateLimiter: RateLimiter(), waiting: map[reconcile.Request]bool{}}
}

// When is called for an object that failed: it waits.
func (r *Retry) When(item reconcile.Request) time.Duration {
	r.mu.Lock()
	r.waiting[item] = true
	r.mu.Unlock()
	return r.TypedRateLimiter.When(item)
}

// Forget is called for an object that succeeded: it no longer waits.
func (r *Retry) Forget(item reconcile.Request) {
	r.mu.Lock()
	delete(r.waiting, item)
	r.mu.Unlock()
	r.TypedRateLimiter.Forget(item)
}

// Start makes the Retry a source of its controller: it takes the
// controller's queue and listens for recovered services.
func (r *Retry) Start(_ context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
	r.mu.Lock()
	r.queue = q
	r.mu.Unlock()
	openstack.Availability().OnRecovery(func(string, time.Duration) { r.Requeue() })
	return nil
}

// Requeue queues every waiting object now (their backoff is kept: one
// that fails again waits as long as it would have).
func (r *Retry) Requeue() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.queue == nil {
		return 0
	}
	for item := range r.waiting {
		r.queue.Add(item)
	}
	return len(r.waiting)
}

// Controller gives a controller workers and a Retry.
func Controller(b *builder.Builder, workers int) *builder.Builder {
	r := NewRetry()
	return b.WithOptions(controller.Options{MaxConcurrentReconciles: workers, RateLimiter: r}).WatchesRawSource(r)
}
