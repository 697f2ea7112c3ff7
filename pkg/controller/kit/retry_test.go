package kit

import (
	"context"
	"testing"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// TestRetryRequeuesWaiting: the objects in backoff, and only they, are
// queued at once by Requeue.
func TestRetryRequeuesWaiting(t *testing.T) {
	r := NewRetry()
	q := workqueue.NewTypedRateLimitingQueue[reconcile.Request](r)
	defer q.ShutDown()
	if err := r.Start(context.Background(), q); err != nil {
		t.Fatal(err)
	}
	a := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "a"}}
	b := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "b"}}
	for i := 0; i < 8; i++ { // a: a long backoff (64 s)
		q.AddRateLimited(a)
	}
	q.AddRateLimited(b)
	r.Forget(b) // b succeeded
	if q.Len() != 0 {
		t.Fatalf("queue length %d before the requeue, want 0 (all in backoff)", q.Len())
	}
	if n := r.Requeue(); n != 1 {
		t.Fatalf("requeued %d, want 1", n)
	}
	item, _ := q.Get()
	if item != a || q.Len() != 0 {
		t.Fatalf("queued %v (and %d more), want only %v", item, q.Len(), a)
	}
	q.Done(item)
	if got := r.NumRequeues(a); got != 8 {
		t.Fatalf("a's backoff reset (%d failures), want kept", got)
	}
}
