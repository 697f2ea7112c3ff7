package loadbalancer

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	kuryrv1 "github.com/kuryr-k8s/kuryr/api/v1"
	"github.com/kuryr-k8s/kuryr/pkg/octavia"
)

// Octavia's API holds a load balancer and its listener and pool PENDING_*
// while a provider works, and takes them back to ACTIVE from the status
// the provider reports. The ovn provider runs in every API worker, each
// with its own copy of the OVN database: under load a worker acts on a
// copy that lacks the last change, fails, and reports a status that names
// objects another worker deleted, which Octavia rejects whole. What it
// leaves: a load balancer ACTIVE with a listener or pool still PENDING_*
// (every write to them answers 409 "immutable", forever), or a member
// Octavia shows and OVN does not (see step). Octavia has no call that
// resets a status; deleting the load balancer (cascade) is the way out.

// stuckGrace: how long a listener or pool may stay PENDING_* under an
// ACTIVE load balancer, with no load balancer of the cluster settling
// meanwhile, before kuryr takes its status for lost. A provider reports a
// change at once, but works through its requests one at a time: under a
// burst (20 load balancers created whole at once: a minute and more with
// ovn-octavia-provider 8.0 on 2 cores) a fully populated load balancer is
// ACTIVE long before its last pool, while the others' settle. So a child
// is taken for lost only once the provider has been seen idle that long,
// or after stuckMax whatever the others do.
const (
	stuckGrace = time.Minute
	stuckMax   = 10 * time.Minute
)

// pendingChild says which listener or pool is PENDING_*, "" when none.
func pendingChild(obs observed) string {
	for _, l := range obs.listeners {
		if octavia.Pending(l.ProvisioningStatus) {
			return "listener " + l.ID + " is " + l.ProvisioningStatus
		}
	}
	for _, p := range obs.pools {
		if octavia.Pending(p.ProvisioningStatus) {
			return "pool " + p.ID + " is " + p.ProvisioningStatus
		}
	}
	return ""
}

// stuck waits for a PENDING_* child of an ACTIVE load balancer to settle
// (stuckGrace with the provider idle, at most stuckMax), then replaces the
// load balancer.
func (r *Reconciler) stuck(ctx context.Context, klb *kuryrv1.KuryrLoadBalancer, lb *octavia.LoadBalancer, uid, child string) (ctrl.Result, error) {
	d, total := r.progress.stuck(uid, child)
	if total < stuckMax && (d < stuckGrace || r.progress.idle() < stuckGrace) {
		setReady(klb, metav1.ConditionFalse, kuryrv1.ReasonWaiting, child+" under an ACTIVE load balancer")
		return ctrl.Result{RequeueAfter: stuckGrace / 6}, nil
	}
	r.event(ctx, klb, corev1.EventTypeWarning, "LoadBalancerStuck", "Replace",
		"%s for %s while load balancer %s is ACTIVE: Octavia lost its provider's status; replacing the load balancer",
		child, d.Round(time.Second), lb.ID)
	return r.replace(ctx, klb, lb, uid, "replace a load balancer whose "+child)
}

// replace deletes a load balancer Octavia cannot bring back (in ERROR, or
// with a child stuck PENDING_*) and forgets it: the next reconcile creates
// another. One replaced maxRepeats times in a row is retried with backoff.
func (r *Reconciler) replace(ctx context.Context, klb *kuryrv1.KuryrLoadBalancer, lb *octavia.LoadBalancer, uid, why string) (ctrl.Result, error) {
	n := r.progress.applied(uid, why)
	if err := r.Octavia.DeleteLoadBalancer(ctx, lb.ID); err != nil {
		r.progress.refused(uid)
		return ctrl.Result{}, err
	}
	forgetLB(klb, lb.ID)
	if n >= maxRepeats {
		return ctrl.Result{}, fmt.Errorf("%s: %d load balancers in a row; retrying with backoff", why, n)
	}
	return ctrl.Result{RequeueAfter: pendingRequeue}, nil
}
