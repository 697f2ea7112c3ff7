package kuryrport

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	kuryrv1 "github.com/kuryr-k8s/kuryr/api/v1"
	"github.com/kuryr-k8s/kuryr/pkg/controller/portgroups"
	"github.com/kuryr-k8s/kuryr/pkg/names"
	"github.com/kuryr-k8s/kuryr/pkg/neutron"
)

// groupsAtCreation are the groups a new port is created with, or a taken
// pooled or adopted port is given before the pod is told about it: there
// is no moment in which a pod runs with fewer groups than it should have.
func (r *Reconciler) groupsAtCreation(ctx context.Context, kp *kuryrv1.KuryrPort) ([]string, error) {
	if r.Groups == nil {
		return nil, nil
	}
	return r.Groups.Groups(ctx, kp)
}

// giveGroups sets a port's groups to the base groups and want, unless it
// carries exactly those already (a pooled or adopted port may carry
// another pod's).
func (r *Reconciler) giveGroups(ctx context.Context, port *neutron.Port, want []string) error {
	if r.Groups == nil || len(want)+len(r.Settings.SecurityGroups) == 0 {
		return nil
	}
	all := union(r.Settings.SecurityGroups, want)
	carried, err := r.setGroups(ctx, port.ID, port.SecurityGroups, false, func([]string) []string { return all })
	if err != nil {
		return err
	}
	port.SecurityGroups = carried
	return nil
}

// groupPorts is the Neutron seam for a port's security groups.
type groupPorts interface {
	SetPortSecurityGroups(ctx context.Context, portID string, sgs []string, revision int) error
	PortSecurityGroups(ctx context.Context, portID string) ([]string, int, error)
	FencePort(ctx context.Context, portID string, revision int) error
}

// ensureGroups gives a plugged pod's port the groups its sources give it
// (policies, Services) and takes away those they no longer give, and
// records them: a restart that finds them recorded writes nothing.
func (r *Reconciler) ensureGroups(ctx context.Context, kp *kuryrv1.KuryrPort, vif kuryrv1.VIF) error {
	if r.Groups == nil {
		return nil
	}
	want, err := r.Groups.Groups(ctx, kp)
	var notReady *portgroups.GroupsNotReady
	if errors.As(err, &notReady) {
		// Fail closed meanwhile; retried until ready.
		if err := r.applyGroups(ctx, kp, vif, notReady.Groups); err != nil {
			return err
		}
		return notReady
	}
	if err != nil {
		return err
	}
	return r.applyGroups(ctx, kp, vif, want)
}

func (r *Reconciler) applyGroups(ctx context.Context, kp *kuryrv1.KuryrPort, vif kuryrv1.VIF, want []string) error {
	// A port created with pod_security_groups only has nothing to add.
	settled := kp.Status.SecurityGroupsApplied || len(want) == 0
	// (A write this process knows went unanswered left the status
	// unsettled too: the check of groupWrites is a safeguard.)
	if _, unanswered := r.groupWrites.at(vif.PortID); slices.Equal(want, kp.Status.SecurityGroups) && settled && !unanswered {
		return nil
	}
	// A status that names groups but was not settled: a write was not
	// seen through, perhaps by a controller since restarted, and may still
	// be done.
	suspect := !kp.Status.SecurityGroupsApplied && len(kp.Status.SecurityGroups) > 0
	// Recorded before the port changes (everything it may carry), after
	// it (what it carries): a crash in between never leaves a group on
	// the port that the status does not name.
	if err := r.recordGroups(ctx, kp, union(kp.Status.SecurityGroups, want), false); err != nil {
		return err
	}
	_, err := r.setGroups(ctx, vif.PortID, nil, suspect, func(carried []string) []string {
		base := r.Settings.SecurityGroups
		if len(base) == 0 {
			// Neutron gave the port the project's default group: keep
			// what the port carries that kuryr did not add.
			base = slices.DeleteFunc(slices.Clone(carried), func(g string) bool { return slices.Contains(kp.Status.SecurityGroups, g) })
		}
		return union(base, want)
	})
	if err != nil {
		return err // retried with backoff; the pod stays plugged
	}
	if err := r.recordGroups(ctx, kp, want, true); err != nil {
		return err
	}
	log.FromContext(ctx).Info("security groups", "port", vif.PortID, "groups", want)
	return nil
}

func (r *Reconciler) recordGroups(ctx context.Context, kp *kuryrv1.KuryrPort, groups []string, applied bool) error {
	if slices.Equal(groups, kp.Status.SecurityGroups) && applied == kp.Status.SecurityGroupsApplied {
		return nil
	}
	orig := kp.DeepCopy()
	kp.Status.SecurityGroups, kp.Status.SecurityGroupsApplied = groups, applied
	if err := r.Status().Patch(ctx, kp, client.MergeFrom(orig)); err != nil {
		return fmt.Errorf("record security groups: %w", err)
	}
	return nil
}

// poolable says whether a port the pod releases may go back to the pool:
// one the pool does not record as this pod's is left to Release to judge
// (never touched: another pod may hold it now); one it does is first
// given back the groups pooled ports are made with (Pool.Groups), when
// sources give ports other groups, and port records them (false: it
// cannot be; it is deleted).
func (r *Reconciler) poolable(ctx context.Context, podUID string, port *neutron.Port) bool {
	if r.Groups == nil || !r.Pool.Holds(port.ID, podUID) {
		return true
	}
	groups := r.Pool.Groups(ctx)
	if len(groups) == 0 {
		return false
	}
	// The ledger's copy of the port's groups is not kept up to date (the
	// KuryrPort's status is): the port is read.
	carried, err := r.setGroups(ctx, port.ID, nil, false, func([]string) []string { return union(groups, nil) })
	if err != nil {
		log.FromContext(ctx).Info("port not pooled: its groups could not be reset", "port", port.ID, "error", err.Error())
		return false
	}
	port.SecurityGroups = carried
	return true
}

// failClosed: a pod whose groups cannot be told yet already has a port
// (made or taken before a policy changed): the port gets the groups that
// fail closed meanwhile, so it never keeps a group that is going away
// (whose policy would wait for it forever) nor an open one.
func (r *Reconciler) failClosed(ctx context.Context, kp *kuryrv1.KuryrPort, err error) error {
	var nr *portgroups.GroupsNotReady
	p, held := r.Ledger.Lookup(kp.Spec.PodUID)
	if !errors.As(err, &nr) || !held || r.Ledger.Doomed(p.ID) || r.unfinished(kp, p) {
		return nil // a port Neutron may still be creating carries nothing yet
	}
	if slices.Contains(p.Tags, names.AdoptedTag) {
		// In use by a running pod whose KuryrPort kuryr never completed,
		// adopted from the original kuryr (docs/migrate.md): its groups
		// enforce the original's policies until kuryr's are known.
		return nil
	}
	if err := r.giveGroups(ctx, &p, nr.Groups); err != nil {
		return err
	}
	r.Ledger.Record(kp.Spec.PodUID, p)
	return nil
}

// union returns the sorted, de-duplicated groups of a and b.
func union(a, b []string) []string {
	out := append(slices.Clone(a), b...)
	slices.Sort(out)
	return slices.Compact(out)
}
