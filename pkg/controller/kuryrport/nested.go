package kuryrport

import (
	"context"

	kuryrv1 "github.com/kuryr-k8s/kuryr/api/v1"
	"github.com/kuryr-k8s/kuryr/pkg/neutron"
)

// onVM says whether node is a VM node (its pods' ports sit on its VM's
// port).
func (r *Reconciler) onVM(ctx context.Context, node string) (bool, error) {
	if r.Nested == nil {
		return false, nil
	}
	return r.Nested.Nested(ctx, node)
}

// place puts a nested pod's port on its VM's port and records where in
// the VIF. With nested-macvlan the pod's port is never bound (its traffic
// is the VM port's, up while its node runs): it is usable at once.
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
	}
	return nil
}

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
