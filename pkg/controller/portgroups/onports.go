package portgroups

import (
	"context"
	"fmt"
	"slices"

	"sigs.k8s.io/controller-runtime/pkg/client"

	kuryrv1 "github.com/kuryr-k8s/kuryr/api/v1"
)

// GroupOnPorts reports whether a KuryrPort's status still names the
// security group: its port carries it, or an update of the port that adds
// or removes it may still be in flight (the KuryrPort reconciler records every group
// the port may carry before the update, and what it carries after). A
// group's owner deletes it only once this is false.
//
// Neutron's own "in use" refusal is not enough: ML2/OVN commits a port
// update to its database before it updates OVN, so a delete between the
// two succeeds and removes the group's OVN port group; the port update
// then fails in OVN ("Port group ... does not exist"), the port keeps its
// old OVN state, and every later update of it (its maintenance task's
// too) fails the same way: the pod stays cut off.
func GroupOnPorts(ctx context.Context, c client.Reader, group string) (bool, error) {
	var kps kuryrv1.KuryrPortList
	if err := c.List(ctx, &kps, client.UnsafeDisableDeepCopy); err != nil {
		return false, fmt.Errorf("list KuryrPorts: %w", err)
	}
	for i := range kps.Items {
		if slices.Contains(kps.Items[i].Status.SecurityGroups, group) {
			return true, nil
		}
	}
	return false, nil
}
