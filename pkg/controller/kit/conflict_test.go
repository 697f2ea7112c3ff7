package kit

import (
	"context"
	"errors"
	"fmt"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

func TestRetryConflicts(t *testing.T) {
	conflict := apierrors.NewConflict(schema.GroupResource{Group: "openstack.org", Resource: "kuryrports"}, "p",
		errors.New("the object has been modified"))
	other := errors.New("neutron is down")
	for _, c := range []struct {
		name    string
		res     reconcile.Result
		err     error
		wantRes reconcile.Result
		wantErr error
	}{
		{"success passes", reconcile.Result{RequeueAfter: 7}, nil, reconcile.Result{RequeueAfter: 7}, nil},
		{"other errors pass", reconcile.Result{}, other, reconcile.Result{}, other},
		{"a conflict is retried soon, not an error", reconcile.Result{}, conflict, reconcile.Result{RequeueAfter: ConflictRetry}, nil},
		{"a wrapped conflict too", reconcile.Result{}, fmt.Errorf("write port x to status: %w", conflict),
			reconcile.Result{RequeueAfter: ConflictRetry}, nil},
		{"a conflict joined with another error passes", reconcile.Result{}, errors.Join(other, conflict),
			reconcile.Result{}, other},
	} {
		t.Run(c.name, func(t *testing.T) {
			inner := reconcile.Func(func(context.Context, reconcile.Request) (reconcile.Result, error) { return c.res, c.err })
			res, err := RetryConflicts(inner).Reconcile(context.Background(), reconcile.Request{})
			if res != c.wantRes || !errors.Is(err, c.wantErr) || (c.wantErr == nil && err != nil) {
				t.Errorf("got (%+v, %v), want (%+v, %v)", res, err, c.wantRes, c.wantErr)
			}
		})
	}
}

// A conflict that keeps coming back is retried later each time, and is an
// error after ConflictsQuiet quiet retries; a success starts the count
// again.
func TestRetryConflictsInARow(t *testing.T) {
	var err error = apierrors.NewConflict(schema.GroupResource{Resource: "kuryrports"}, "p", errors.New("modified"))
	r := RetryConflicts(reconcile.Func(func(context.Context, reconcile.Request) (reconcile.Result, error) { return reconcile.Result{}, err }))
	req := reconcile.Request{}
	for i := range ConflictsQuiet {
		res, got := r.Reconcile(context.Background(), req)
		if got != nil {
			t.Fatalf("conflict %d returned: %v", i+1, got)
		}
		if want := ConflictRetry << i; res.RequeueAfter != want {
			t.Fatalf("conflict %d in a row retried after %s, want %s", i+1, res.RequeueAfter, want)
		}
	}
	if _, got := r.Reconcile(context.Background(), req); !apierrors.IsConflict(got) {
		t.Fatalf("conflict %d in a row not returned: %v", ConflictsQuiet+1, got)
	}
	if _, got := r.Reconcile(context.Background(), req); got != nil {
		t.Fatalf("the count did not start again after the error: %v", got)
	}
}
