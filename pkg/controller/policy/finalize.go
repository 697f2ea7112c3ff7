package policy

import (
	"context"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"

	kuryrv1 "github.com/kuryr-k8s/kuryr/api/v1"
	"github.com/kuryr-k8s/kuryr/pkg/controller/kit"
	"github.com/kuryr-k8s/kuryr/pkg/controller/portgroups"
	"github.com/kuryr-k8s/kuryr/pkg/neutron"
)

// finalize deletes the policy's security group once no port carries it
// (the KuryrPort reconciler takes it off the pods' ports as soon as the
// policy is gone), then the groups of its peers no other policy names,
// then lets the object go.
func (r *GroupReconciler) finalize(ctx context.Context, knp *kuryrv1.KuryrNetworkPolicy) (ctrl.Result, error) {
	if !controllerutil.ContainsFinalizer(knp, kuryrv1.KuryrNetworkPolicyFinalizer) {
		return ctrl.Result{}, nil
	}
	ids := []string{knp.Status.SecurityGroupID}
	found, err := r.Neutron.FindSecurityGroups(ctx, r.tags(knp))
	if err != nil {
		return ctrl.Result{}, err
	}
	for _, sg := range found {
		ids = append(ids, sg.ID)
	}
	for _, id := range ids {
		if id == "" {
			continue
		}
		if busy, err := portgroups.GroupOnPorts(ctx, r.Client, id); err != nil || busy {
			log.FromContext(ctx).V(1).Info("security group still named by KuryrPorts", "group", id)
			return ctrl.Result{RequeueAfter: inUseRetry}, err
		}
		err := r.Neutron.DeleteSecurityGroup(ctx, id)
		if neutron.InUse(err) {
			log.FromContext(ctx).V(1).Info("security group still on ports", "group", id)
			return ctrl.Result{RequeueAfter: inUseRetry}, nil
		}
		if err != nil {
			return ctrl.Result{}, err
		}
	}
	use := r.addressMode(knp)
	pending, err := r.release(ctx, knp, r.securityPeers(), true, !use)
	if err != nil {
		return ctrl.Result{}, err
	}
	pendingAddresses, err := r.release(ctx, knp, r.addressPeers(), true, use)
	if err != nil {
		return ctrl.Result{}, err
	}
	if pending || pendingAddresses {
		return ctrl.Result{RequeueAfter: inUseRetry}, nil
	}
	return ctrl.Result{}, kit.RemoveFinalizer(ctx, r.Client, knp, kuryrv1.KuryrNetworkPolicyFinalizer)
}
