package kit

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/kuryr-k8s/kuryr/pkg/retry"
)

// Failure is a failed step of a reconcile, as the user is told of it.
type Failure struct {
	// Regarding is the object the Warning Event is about (the user's:
	// the pod, the Service, the policy), Related the one reconciled, if
	// another.
	Regarding, Related runtime.Object
	// Kind is the failure's class, the condition's and the Event's reason.
	Kind string
	// Action is what failed ("CreatePort"), the Event's action.
	Action string
	// Note is the Event's note; empty: the cause.
	Note string
	// SetReady records Ready=False with the reason and message on the
	// reconciled object; nil: it has no such condition (a Node).
	SetReady func(reason, message string) error
}

// Fail makes cause visible, Ready=False (SetReady) and a Warning Event,
// and returns it, so that the work queue retries with backoff. A cause
// that is the controller stopping is returned alone: the next leader
// takes over, nothing failed.
func Fail(ctx context.Context, rec Recorder, f Failure, cause error) error {
	if retry.Stopping(ctx, cause) {
		return cause
	}
	if f.SetReady != nil {
		if err := f.SetReady(f.Kind, cause.Error()); err != nil {
			log.FromContext(ctx).Error(err, "could not record the failure", "action", f.Action, "kind", fmt.Sprintf("%T", f.Regarding))
		}
	}
	note := f.Note
	if note == "" {
		note = cause.Error()
	}
	rec.Eventf(f.Regarding, f.Related, corev1.EventTypeWarning, f.Kind, f.Action, "%s", note)
	return cause
}
