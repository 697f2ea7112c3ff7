package loadbalancer

import (
	"context"
	"errors"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"

	kuryrv1 "github.com/kuryr-k8s/kuryr/api/v1"
	"github.com/kuryr-k8s/kuryr/pkg/controller/kit"
	"github.com/kuryr-k8s/kuryr/pkg/octavia"
)

// finalize deletes the Service's load balancers (recorded or found by tag)
// with everything in them, releases the floating IPs kuryr allocated and
// clears the Service's status.loadBalancer if the Service is still there.
func (r *Reconciler) finalize(ctx context.Context, klb *kuryrv1.KuryrLoadBalancer, uid string) (ctrl.Result, error) {
	if !controllerutil.ContainsFinalizer(klb, kuryrv1.KuryrLoadBalancerFinalizer) {
		return ctrl.Result{}, nil
	}
	// Floating IPs first: found on the VIP port while it exists.
	published, vipPort := publishedIP(klb), ""
	if st := klb.Status.LoadBalancer; st != nil {
		vipPort = st.PortID
	}
	if err := r.releaseFloatingIPs(ctx, klb, vipPort, uid); err != nil {
		return ctrl.Result{}, err
	}
	// The provider still working through kuryr's last write would run the
	// cascade delete beside it and fail it half way.
	if w, after := r.lastWrite(ctx, klb, uid); w != "" {
		return ctrl.Result{RequeueAfter: after}, nil
	}
	// Read before the list: a create that settles after it was listed is
	// listed once more.
	pending, left := r.creates().Pending(uid)
	lbs, err := r.Octavia.FindLoadBalancers(ctx, r.tags(uid)[:2])
	if err != nil {
		return ctrl.Result{}, err
	}
	if st := klb.Status.LoadBalancer; st != nil && st.ID != "" && !hasLB(lbs, st.ID) {
		lbs = append(lbs, octavia.LoadBalancer{ID: st.ID})
	}
	if res, wait, err := r.deleteLBs(ctx, klb, uid, lbs); wait || err != nil {
		return res, err
	}
	// A create that went unanswered may still commit, even when another
	// load balancer was found and deleted: the finalizer stays until its
	// settle time is over, and what it made is then found and deleted.
	if pending && left > 0 {
		return ctrl.Result{RequeueAfter: left}, nil
	}
	r.creates().Clear(uid)
	if err := r.publish(ctx, klb, uid, nil, published); err != nil {
		return ctrl.Result{}, err
	}
	if r.Groups != nil {
		groups, err := r.findGroups(ctx, uid)
		if err != nil {
			return ctrl.Result{}, err
		}
		// One still on a port (409) or named by a KuryrPort is left to
		// the sweep, which deletes it under the same two conditions.
		if err := r.dropGroups(ctx, klb, groups); err != nil && !errors.Is(err, errGroupInUse) {
			return ctrl.Result{}, err
		}
	}
	// Forgotten last: a later step that fails must not restart the wait.
	r.progress.done(uid)
	r.warned.forget(uid)
	r.reasserts.forget(uid)
	return ctrl.Result{}, kit.RemoveFinalizer(ctx, r.Client, klb, kuryrv1.KuryrLoadBalancerFinalizer)
}

// deleteLBs deletes the load balancers (cascade) and waits until Octavia
// no longer lists them: a cascade delete the provider fails leaves the
// load balancer in ERROR, and it is deleted again (every errorRedelete).
// One still listed deleteWait after kuryr first deleted it (stuck
// PENDING_DELETE: the provider lost the delete, and Octavia refuses every
// other write to it) is given up, with a Warning that says what an
// operator does. Only listed load balancers are waited for (the recorded
// id alone may name one long gone); once none is, the wait starts afresh
// for any that a late create commits.
func (r *Reconciler) deleteLBs(ctx context.Context, klb *kuryrv1.KuryrLoadBalancer, uid string, lbs []octavia.LoadBalancer) (ctrl.Result, bool, error) {
	var left []string
	wait := pendingRequeue
	if slices.ContainsFunc(lbs, func(lb octavia.LoadBalancer) bool { return lb.ProvisioningStatus != "" }) {
		r.progress.notGone(uid) // also when the delete below is refused (Busy)
	}
	for _, lb := range lbs {
		if lb.ProvisioningStatus != octavia.StatusPendingDelete {
			if err := r.Octavia.DeleteLoadBalancer(ctx, lb.ID); err != nil {
				if octavia.Busy(err) {
					return ctrl.Result{RequeueAfter: pendingRequeue}, true, nil
				}
				return ctrl.Result{}, true, err
			}
			log.FromContext(ctx).Info("load balancer deleted", "loadBalancer", lb.ID, "was", lb.ProvisioningStatus)
		}
		if lb.ProvisioningStatus == "ERROR" {
			wait = errorRedelete
		}
		if lb.ProvisioningStatus != "" {
			left = append(left, lb.ID)
		}
	}
	if len(left) == 0 {
		// Gone, for GoneSettle: the provider may report a load balancer
		// ERROR again after it reported it DELETED (a request of a failed
		// delete that ends late), and Octavia then lists it again.
		if d := r.progress.gone(uid); d < r.Settings.GoneSettle {
			return ctrl.Result{RequeueAfter: r.Settings.GoneSettle - d}, true, nil
		}
		r.progress.deletedDone(uid)
		return ctrl.Result{}, false, nil
	}
	if since := r.progress.deleted(uid); since > deleteWait {
		r.event(ctx, klb, corev1.EventTypeWarning, "DeleteNotFinished", "Delete",
			"load balancers %s still listed by Octavia %s after kuryr deleted them: for each still PENDING_DELETE (the "+
				"provider lost the delete), %s", strings.Join(left, ", "), since.Round(time.Second), octavia.StuckDeleteRemedy)
		return ctrl.Result{}, false, nil
	}
	return ctrl.Result{RequeueAfter: wait}, true, nil
}

func hasLB(lbs []octavia.LoadBalancer, id string) bool {
	for _, lb := range lbs {
		if lb.ID == id {
			return true
		}
	}
	return false
}

// lastWrite waits, as ensure does, for Octavia to show kuryr's last write
// to the Service's load balancer; "" when there is none to wait for (or
// the load balancer cannot be read: the delete goes on).
func (r *Reconciler) lastWrite(ctx context.Context, klb *kuryrv1.KuryrLoadBalancer, uid string) (string, time.Duration) {
	st := klb.Status.LoadBalancer
	if st == nil || st.ID == "" || !r.progress.hasEcho(uid) {
		return "", 0
	}
	lb, err := r.Octavia.GetLoadBalancer(ctx, st.ID)
	switch {
	case err != nil || lb == nil || lb.ProvisioningStatus == octavia.StatusError || lb.ProvisioningStatus == octavia.StatusPendingDelete:
		return "", 0 // unreadable, gone, or not one the delete could race
	case octavia.Pending(lb.ProvisioningStatus):
		return "load balancer " + lb.ProvisioningStatus, pendingRequeue // ACTIVE again may be between two requests
	}
	obs, err := r.observe(ctx, st.ID)
	if err != nil {
		return "", 0
	}
	return r.progress.awaiting(uid, st.ID, obs)
}
