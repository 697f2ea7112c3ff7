package loadbalancer

import (
	"context"
	"errors"

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
	lbs, err := r.Octavia.FindLoadBalancers(ctx, r.tags(uid)[:2])
	if err != nil {
		return ctrl.Result{}, err
	}
	if st := klb.Status.LoadBalancer; st != nil && st.ID != "" && !hasLB(lbs, st.ID) {
		lbs = append(lbs, octavia.LoadBalancer{ID: st.ID})
	}
	if pending, left := r.creates().Pending(uid); pending && left > 0 && len(lbs) == 0 {
		return ctrl.Result{RequeueAfter: left}, nil // a create may still commit
	}
	r.creates().Clear(uid)
	r.progress.done(uid)
	for _, lb := range lbs {
		if lb.ProvisioningStatus == "PENDING_DELETE" {
			continue
		}
		if err := r.Octavia.DeleteLoadBalancer(ctx, lb.ID); err != nil {
			if octavia.Busy(err) {
				return ctrl.Result{RequeueAfter: pendingRequeue}, nil
			}
			return ctrl.Result{}, err
		}
		log.FromContext(ctx).Info("load balancer deleted", "loadBalancer", lb.ID)
	}
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
	return ctrl.Result{}, kit.RemoveFinalizer(ctx, r.Client, klb, kuryrv1.KuryrLoadBalancerFinalizer)
}

func hasLB(lbs []octavia.LoadBalancer, id string) bool {
	for _, lb := range lbs {
		if lb.ID == id {
			return true
		}
	}
	return false
}
