// Package kpstatus holds the one KuryrPort status write shared by the
// controller and the daemons.
package kpstatus

import (
	"context"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kuryrv1 "github.com/kuryr-k8s/kuryr/api/v1"
)

// MarkActive sets only status.vifs.eth0.active (a merge patch), so that it
// never races with the controller writing the other fields. With OVN the
// node's daemon calls it once ovn-controller has installed the port's flows
// (the event that makes Neutron report the port ACTIVE); with other
// backends the controller calls it when Neutron reports ACTIVE.
func MarkActive(ctx context.Context, c client.Client, ns, name string) error {
	kp := &kuryrv1.KuryrPort{}
	kp.Namespace, kp.Name = ns, name
	patch := client.RawPatch(types.MergePatchType, []byte(`{"status":{"vifs":{"eth0":{"active":true}}}}`))
	return client.IgnoreNotFound(c.Status().Patch(ctx, kp, patch))
}
