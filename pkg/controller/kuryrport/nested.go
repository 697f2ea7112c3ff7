package kuryrport

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	kuryrv1 "github.com/kuryr-k8s/kuryr/api/v1"
	"github.com/kuryr-k8s/kuryr/pkg/controller/nested"
	"github.com/kuryr-k8s/kuryr/pkg/neutron"
)

// where is how node's pods are plugged (a hypervisor's when there is no
// placer).
func (r *Reconciler) where(ctx context.Context, node string) (nested.Where, error) {
	if r.Nested == nil {
		return nested.Where{Mode: nested.ModeNeutron}, nil
	}
	return r.Nested.Where(ctx, node)
}

// target is where kp's port goes: the VM port's network for a pod of a
// nested-macvlan node, else the subnet driver's.
func (r *Reconciler) target(ctx context.Context, kp *kuryrv1.KuryrPort, where nested.Where) (Target, bool, error) {
	if where.SubnetID != "" {
		return Target{NetworkID: where.NetworkID, SubnetID: where.SubnetID}, true, nil
	}
	return r.Target(ctx, kp)
}

// place puts a nested pod's port on its VM's port and records where in
// the VIF. With nested-macvlan the pod's port is never bound (its traffic
// is the VM port's, up while its node runs): it is usable at once, and the
// pod's MAC is its pair's (nested.MacvlanMAC), not the port's.
func (r *Reconciler) place(ctx context.Context, kp *kuryrv1.KuryrPort, port neutron.Port, vif *kuryrv1.VIF) error {
	at, err := r.Nested.Place(ctx, kp.Spec.PodNodeName, []neutron.Port{port})
	if err != nil {
		return err
	}
	where := at[port.ID]
	vif.Nested = &where
	vif.Bridge = ""
	if where.Mode == kuryrv1.NestedMacvlan {
		vif.Active = true
		vif.MACAddress = nested.MacvlanMAC(port.ID) // the pair's, not the port's
		if r.Groups != nil {
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: kp.Name, Namespace: kp.Namespace, UID: types.UID(kp.Spec.PodUID)}}
			r.Recorder.Eventf(pod, kp, corev1.EventTypeWarning, ReasonPoliciesNotEnforced, "AttachToVM",
				"NetworkPolicies are not enforced for this pod: it is a macvlan of its VM's port (nested-macvlan on node %s), "+
					"whose security groups alone filter its traffic; use nested-vlan for per-pod security groups",
				kp.Spec.PodNodeName)
		}
	}
	return nil
}

// ReasonPoliciesNotEnforced: a pod's NetworkPolicies cannot be enforced
// where it runs (nested-macvlan).
const ReasonPoliciesNotEnforced = "NetworkPoliciesNotEnforced"

// nestedOf is where the KuryrPort recorded port on its VM (nil: nowhere,
// e.g. a port only the ledger knew).
func nestedOf(kp *kuryrv1.KuryrPort, portID string) *kuryrv1.NestedVIF {
	for _, v := range kp.Status.VIFs {
		if v.PortID == portID && v.Nested != nil {
			at := *v.Nested
			return &at
		}
	}
	return nil
}
