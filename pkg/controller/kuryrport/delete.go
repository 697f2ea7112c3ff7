package kuryrport

import (
	"context"
	"time"

	"github.com/kuryr-k8s/kuryr/pkg/neutron"
	"github.com/kuryr-k8s/kuryr/pkg/openstack"
)

// deletePort deletes a released port. A delete that went unanswered is not
// sent again at once: an overloaded Neutron is still working on it, and
// every retry queued behind it (five per port in a burst of 40 pods) only
// adds to what it must do. Once the settle time is over the port is read
// (a cheap GET): gone, it is done; still there, it is deleted again, and
// should that go unanswered too the wait doubles. The returned wait is
// non-zero while the settle time runs.
func (r *Reconciler) deletePort(ctx context.Context, id string) (time.Duration, error) {
	if pending, left := r.deletes.Pending(id); pending {
		if left > 0 {
			return left, nil
		}
		if _, err := r.Neutron.GetPort(ctx, id); neutron.IsNotFound(err) {
			r.deletes.Clear(id)
			r.groupWrites.forget(id)
			return 0, nil
		} else if err != nil {
			return 0, err
		}
		r.deletes.GiveUp(id)
	}
	if err := r.Neutron.DeletePort(ctx, id); err != nil {
		if openstack.Unclear(err) {
			r.deletes.Mark(id)
		}
		return 0, err
	}
	r.deletes.Clear(id)
	r.groupWrites.forget(id)
	return 0, nil
}
