package loadbalancer

import (
	"context"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/log"

	kuryrv1 "github.com/kuryr-k8s/kuryr/api/v1"
	"github.com/kuryr-k8s/kuryr/pkg/names"
	"github.com/kuryr-k8s/kuryr/pkg/octavia"
)

// loadBalancer finds the Service's load balancer (by the id in status, else
// by tags: adopted after a restart without a write) or creates it whole.
// After a create whose outcome is unknown it keeps looking for
// openstack.UnclearSettle before creating again. nil with a wait: look again
// then.
func (r *Reconciler) loadBalancer(ctx context.Context, klb *kuryrv1.KuryrLoadBalancer, uid string) (*octavia.LoadBalancer, time.Duration, error) {
	lb, err := r.find(ctx, klb, uid)
	if err != nil {
		return nil, 0, err
	}
	if lb != nil {
		r.creates().Clear(uid)
		if why := mismatch(klb, lb); why != "" {
			r.event(ctx, klb, corev1.EventTypeNormal, "LoadBalancerReplaced", "Replace",
				"load balancer %s is replaced: %s", lb.ID, why)
			if err := r.Octavia.DeleteLoadBalancer(ctx, lb.ID); err != nil {
				return nil, 0, err
			}
			forgetLB(klb, lb.ID)
			return nil, pendingRequeue, nil
		}
		return lb, 0, nil
	}
	if pending, left := r.creates().Pending(uid); pending && left > 0 {
		return nil, left, nil
	}
	r.creates().GiveUp(uid)
	lb, err = r.Octavia.CreateLoadBalancer(ctx, octavia.LoadBalancerSpec{
		Name: lbName(klb.Namespace, klb.Name), Description: "kuryr: Service " + lbName(klb.Namespace, klb.Name),
		VIPAddress: klb.Spec.IP, VIPSubnetID: klb.Spec.SubnetID, Provider: klb.Spec.Provider,
		ProjectID: klb.Spec.ProjectID, Tags: r.tags(uid), Listeners: desiredListeners(klb, r.tags(uid), r.createAffinity(klb)),
	})
	if err != nil {
		if octavia.Unclear(err) {
			r.creates().Mark(uid)
		}
		return nil, 0, err
	}
	log.FromContext(ctx).Info("load balancer created", "loadBalancer", lb.ID, "vip", lb.VIPAddress)
	return lb, 0, nil
}

// find returns the Service's load balancer, deleting duplicates (left by a
// create that went unanswered and was retried): the oldest is kept.
func (r *Reconciler) find(ctx context.Context, klb *kuryrv1.KuryrLoadBalancer, uid string) (*octavia.LoadBalancer, error) {
	if st := klb.Status.LoadBalancer; st != nil && st.ID != "" {
		lb, err := r.Octavia.GetLoadBalancer(ctx, st.ID)
		if err != nil {
			return nil, err
		}
		if lb != nil && names.ServiceUIDOf(lb.Tags) == uid {
			return lb, nil
		}
		klb.Status.LoadBalancer = nil
	}
	lbs, err := r.Octavia.FindLoadBalancers(ctx, r.tags(uid)[:2])
	if err != nil || len(lbs) == 0 {
		return nil, err
	}
	slices.SortFunc(lbs, func(a, b octavia.LoadBalancer) int { return a.CreatedAt.Compare(b.CreatedAt) })
	// One kuryr deleted to replace it is never the one kept (ensure
	// deletes it again when it comes back; a list that misses it once
	// does not make it forgotten: the provider may list it again later).
	slices.SortStableFunc(lbs, func(a, b octavia.LoadBalancer) int {
		return cmpBool(wasReplaced(klb, a.ID), wasReplaced(klb, b.ID))
	})
	for _, dup := range lbs[1:] {
		if err := r.Octavia.DeleteLoadBalancer(ctx, dup.ID); err != nil {
			log.FromContext(ctx).Info("duplicate load balancer not deleted yet", "loadBalancer", dup.ID, "error", err.Error())
			continue
		}
		log.FromContext(ctx).Info("duplicate load balancer deleted", "loadBalancer", dup.ID, "kept", lbs[0].ID)
	}
	return &lbs[0], nil
}

// maxReplaced bounds the load balancers a status remembers as replaced.
const maxReplaced = 10

// forgetLB drops a load balancer kuryr deleted to replace it from the
// status, and remembers it as replaced: the next reconcile creates
// another.
func forgetLB(klb *kuryrv1.KuryrLoadBalancer, id string) {
	replaced := append(slices.DeleteFunc(slices.Clone(klb.Status.Replaced), func(r string) bool { return r == id }), id)
	if len(replaced) > maxReplaced {
		replaced = replaced[len(replaced)-maxReplaced:]
	}
	klb.Status = kuryrv1.KuryrLoadBalancerStatus{Conditions: klb.Status.Conditions, SecurityGroup: klb.Status.SecurityGroup, Replaced: replaced}
}

// wasReplaced says whether kuryr deleted the load balancer to replace it.
func wasReplaced(klb *kuryrv1.KuryrLoadBalancer, id string) bool {
	return slices.Contains(klb.Status.Replaced, id)
}

// mismatch says why an existing load balancer cannot serve the spec.
func mismatch(klb *kuryrv1.KuryrLoadBalancer, lb *octavia.LoadBalancer) string {
	switch {
	case lb.VIPAddress != klb.Spec.IP:
		return "its VIP " + lb.VIPAddress + " is not the ClusterIP " + klb.Spec.IP
	case klb.Spec.Provider != "" && lb.Provider != klb.Spec.Provider:
		return "its provider " + lb.Provider + " is not " + klb.Spec.Provider
	}
	return ""
}

// cmpBool orders false before true.
func cmpBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return 1
	}
	return -1
}
