// Package kuryrport reconciles KuryrPorts with Neutron ports: one port per
// KuryrPort, on the pod's subnet, bound to the pod's node, and its details
// written to the KuryrPort status for the node's daemon.
package kuryrport

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"

	kuryrv1 "github.com/kuryr-k8s/kuryr/api/v1"
	"github.com/kuryr-k8s/kuryr/pkg/controller/kit"
	"github.com/kuryr-k8s/kuryr/pkg/controller/nested"
	"github.com/kuryr-k8s/kuryr/pkg/controller/portgroups"
	"github.com/kuryr-k8s/kuryr/pkg/neutron"
	"github.com/kuryr-k8s/kuryr/pkg/openstack"
)

// portAPI is the Neutron seam of this reconciler.
type portAPI interface {
	CreatePort(ctx context.Context, s neutron.PortSpec) (*neutron.Port, error)
	GetPort(ctx context.Context, id string) (*neutron.Port, error)
	ListPorts(ctx context.Context, tags []string, status string) ([]neutron.Port, error)
	DeletePort(ctx context.Context, id string) error
}

// netInfo serves subnet and network details (cached).
type netInfo interface {
	Subnet(ctx context.Context, id string) (*neutron.Subnet, error)
	Network(ctx context.Context, id string) (*neutron.Network, error)
}

// placer puts the ports of pods on VM nodes on their VM's port (package
// nested).
type placer interface {
	Where(ctx context.Context, node string) (nested.Where, error)
	Mode(ctx context.Context, node string) (string, error)
	Place(ctx context.Context, node string, ports []neutron.Port) (map[string]kuryrv1.NestedVIF, error)
	Unplace(ctx context.Context, node string, at *kuryrv1.NestedVIF, port neutron.Port) error
}

// TargetFunc says which network and subnet a KuryrPort's port goes on; ok is
// false while that is not known yet (a namespace's or node's network being
// created).
type TargetFunc func(ctx context.Context, kp *kuryrv1.KuryrPort) (t Target, ok bool, err error)

// Reconciler converges KuryrPorts and Neutron ports.
type Reconciler struct {
	client.Client
	Neutron  portAPI
	Info     netInfo
	Ledger   *Ledger
	Target   TargetFunc
	Recorder kit.Recorder
	Settings Settings
	// Pool, when set, hands out pre-created ports on the target of their
	// node (the default subnet, or the node's own network).
	Pool *Pool
	// Started reports that start-up (ledger, pool) has completed.
	Started interface{ Completed() bool }
	// Groups, when set, gives pods' ports further security groups (their
	// policies', their LoadBalancer Services'), through GroupPorts.
	Groups     portgroups.GroupSource
	GroupPorts groupPorts
	// Addresses, when set, takes a port's addresses out of the address
	// groups its pod must not be admitted by before the KuryrPort gets
	// them, and out of all of them before the port is pooled or deleted.
	Addresses portgroups.AddressGate
	// Nested, when set, places the ports of pods on VM nodes (nested-vlan,
	// nested-macvlan: the cluster's pod_vif_driver or the node's label) on
	// their VM's port instead of binding them to nodes.
	Nested placer
	// Watches: what else makes a KuryrPort's groups change.
	Watches []kit.Watch
	watch   stopwatch
	// deletes are the port deletes that went unanswered (deletePort).
	deletes openstack.Unanswered
	// groupWrites are the ports whose last group write went unanswered
	// (setGroups).
	groupWrites groupWrites
}

// Reconcile creates the port of a KuryrPort, or deletes it when the
// KuryrPort is being deleted.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var kp kuryrv1.KuryrPort
	if err := r.Get(ctx, req.NamespacedName, &kp); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !r.Started.Completed() {
		// Until the ledger is loaded a crash-orphaned port cannot be told
		// from a missing one.
		return ctrl.Result{RequeueAfter: 500 * time.Millisecond}, nil
	}
	if !kp.DeletionTimestamp.IsZero() {
		r.watch.stop(kp.UID)
		wait, err := r.finalize(ctx, &kp)
		return ctrl.Result{RequeueAfter: wait}, err
	}
	if vif, done := kp.Status.DefaultVIF(); done {
		return waitGroups(r.ensureGroups(ctx, &kp, vif))
	}
	r.watch.start(kp.UID)
	res, err := r.ensurePort(ctx, &kp)
	if errors.Is(err, portgroups.ErrGroupsNotReady) {
		if err := r.failClosed(ctx, &kp, err); err != nil {
			return ctrl.Result{}, err
		}
		if err := r.setCondition(ctx, &kp, metav1.ConditionFalse, kuryrv1.ReasonWaiting, err.Error()); err != nil {
			return ctrl.Result{}, err
		}
		return ctrl.Result{RequeueAfter: groupsRecheck}, nil
	}
	return res, err
}

// groupsRecheck: a port waiting for its groups is looked at again this
// often, besides when a policy's group appears (a watch).
const groupsRecheck = time.Second

func waitGroups(err error) (ctrl.Result, error) {
	if errors.Is(err, portgroups.ErrGroupsNotReady) {
		return ctrl.Result{RequeueAfter: groupsRecheck}, nil
	}
	return ctrl.Result{}, err
}

func (r *Reconciler) ensurePort(ctx context.Context, kp *kuryrv1.KuryrPort) (ctrl.Result, error) {
	// The pod controller creates KuryrPorts with the finalizer; one created
	// by hand gets it before any port exists.
	if err := kit.AddFinalizer(ctx, r.Client, kp, kuryrv1.KuryrPortFinalizer); err != nil {
		return ctrl.Result{}, err
	}
	where, err := r.where(ctx, kp.Spec.PodNodeName)
	if err != nil {
		return ctrl.Result{}, r.fail(ctx, kp, "NodeMode", err)
	}
	nested := where.OnVM()
	target, ok, err := r.target(ctx, kp, where)
	if err != nil {
		return ctrl.Result{}, r.fail(ctx, kp, "FindNetwork", err)
	}
	if !ok {
		return ctrl.Result{}, r.setCondition(ctx, kp, metav1.ConditionFalse, kuryrv1.ReasonWaiting, "waiting for the pod's network (its namespace's or node's KuryrNetwork)")
	}
	groups, err := r.groupsAtCreation(ctx, kp)
	if err != nil {
		return ctrl.Result{}, err
	}
	port, reason, err := r.obtainPort(ctx, kp, target, groups, where.Mode)
	var wait settling
	if errors.As(err, &wait) {
		return ctrl.Result{RequeueAfter: wait.wait}, r.setCondition(ctx, kp, metav1.ConditionFalse,
			kuryrv1.ReasonWaiting, wait.why)
	}
	if err != nil {
		return ctrl.Result{}, r.fail(ctx, kp, "CreatePort", err)
	}
	if !nested {
		if res, done, err := r.checkBinding(ctx, kp, &port); done {
			return res, err
		}
	}
	if err := r.giveGroups(ctx, &port, groups); err != nil {
		return ctrl.Result{}, r.fail(ctx, kp, "SetSecurityGroups", err)
	}
	r.Ledger.Record(kp.Spec.PodUID, port) // with the groups it carries now
	if r.Addresses != nil {
		if err := r.Addresses.ReleaseAddresses(ctx, kp, port.HostPrefixes()); err != nil {
			return ctrl.Result{}, r.fail(ctx, kp, "ReleaseAddresses", err)
		}
	}
	r.watch.lap(kp.UID, "port_created")
	vif, err := r.vif(ctx, &port)
	if err != nil {
		return ctrl.Result{}, r.fail(ctx, kp, "DescribePort", err)
	}
	if nested {
		if err := r.place(ctx, kp, port, &vif); err != nil {
			if neutron.InUse(err) && (reason == kuryrv1.ReasonPooled || reason == kuryrv1.ReasonAdopted) {
				// A port made earlier that Neutron will not attach (409:
				// a subport of an old trunk of the node's, the VM replaced)
				// is given up: the retry deletes it (detaching it) and
				// takes or makes another.
				r.Ledger.Doom(port.ID)
			}
			return ctrl.Result{}, r.fail(ctx, kp, "AttachToVM", err)
		}
	}
	if reason == kuryrv1.ReasonPooled {
		vif.Active = false // the pool's copy is old: the activity watcher says
	}
	if err := r.writeVIF(ctx, kp, vif, reason, groups); err != nil {
		return ctrl.Result{}, err
	}
	r.watch.lap(kp.UID, "status_written")
	r.watch.stop(kp.UID)
	return ctrl.Result{}, nil
}

// checkBinding handles a port Neutron has not bound (done: the reconcile
// ends here): one still being created is waited for; one that failed to
// bind, or that stayed unbound past BindTimeout, is replaced on the retry,
// with the reason shown.
func (r *Reconciler) checkBinding(ctx context.Context, kp *kuryrv1.KuryrPort, port *neutron.Port) (ctrl.Result, bool, error) {
	wait, cause := neutron.CheckBinding(port, r.Settings.BindTimeout)
	switch {
	case wait:
		return ctrl.Result{RequeueAfter: time.Second}, true, r.setCondition(ctx, kp, metav1.ConditionFalse,
			kuryrv1.ReasonWaiting, "port binding in progress")
	case cause == nil:
		return ctrl.Result{}, false, nil
	}
	r.Ledger.Doom(port.ID)
	if err := r.discard(ctx, kp, port.ID); err != nil {
		return ctrl.Result{}, true, r.fail(ctx, kp, "DeletePort", err)
	}
	return ctrl.Result{}, true, r.fail(ctx, kp, "BindPort", cause)
}

// discard deletes a port given up and forgets it. Until the delete is
// answered the ledger keeps it doomed, so the retry deletes it again
// rather than use it (a delete that went unanswered may still commit).
func (r *Reconciler) discard(ctx context.Context, kp *kuryrv1.KuryrPort, portID string) error {
	if err := r.Neutron.DeletePort(ctx, portID); err != nil {
		return err
	}
	r.groupWrites.forget(portID)
	r.Ledger.ForgetPort(kp.Spec.PodUID, portID)
	if r.Pool != nil {
		r.Pool.Forget(portID)
	}
	return nil
}

func (r *Reconciler) vif(ctx context.Context, p *neutron.Port) (kuryrv1.VIF, error) {
	byID := map[string]*neutron.Subnet{}
	for _, ip := range p.FixedIPs {
		s, err := r.Info.Subnet(ctx, ip.SubnetID)
		if err != nil {
			return kuryrv1.VIF{}, err
		}
		byID[s.ID] = s
	}
	n, err := r.Info.Network(ctx, p.NetworkID)
	if err != nil {
		return kuryrv1.VIF{}, err
	}
	return vifFor(p, byID, n.MTU, r.Settings)
}

// writeVIF records the port, on the KuryrPort as last read: a stale read
// (another controller wrote meanwhile) fails and is retried, never
// overwriting a port already recorded.
func (r *Reconciler) writeVIF(ctx context.Context, kp *kuryrv1.KuryrPort, vif kuryrv1.VIF, reason string, groups []string) error {
	patch := client.MergeFromWithOptions(kp.DeepCopy(), client.MergeFromWithOptimisticLock{})
	kp.Status.VIFs = map[string]kuryrv1.VIF{kuryrv1.DefaultInterface: vif}
	if len(groups) > 0 {
		kp.Status.SecurityGroups, kp.Status.SecurityGroupsApplied = groups, true
	}
	meta.SetStatusCondition(&kp.Status.Conditions, metav1.Condition{
		Type: kuryrv1.ConditionReady, Status: metav1.ConditionTrue, Reason: reason,
		Message: fmt.Sprintf("port %s (%s) on node %s", vif.PortID, vif.IPs[0].Address, kp.Spec.PodNodeName),
	})
	if err := r.Status().Patch(ctx, kp, patch); err != nil {
		return fmt.Errorf("write port %s to status: %w", vif.PortID, err)
	}
	log.FromContext(ctx).V(1).Info("port ready", "port", vif.PortID, "ip", vif.IPs[0].Address, "reason", reason)
	return nil
}

// finalize deletes the pod's port (whether the status names it or only the
// ledger knows it) and then releases the KuryrPort.
func (r *Reconciler) finalize(ctx context.Context, kp *kuryrv1.KuryrPort) (time.Duration, error) {
	if !controllerutil.ContainsFinalizer(kp, kuryrv1.KuryrPortFinalizer) {
		return 0, nil
	}
	held := r.portsOf(kp)
	if r.Addresses != nil {
		var addresses []string
		for i := range held {
			addresses = append(addresses, held[i].HostPrefixes()...)
		}
		if err := r.Addresses.ForgetAddresses(ctx, addresses); err != nil {
			return 0, r.fail(ctx, kp, "ForgetAddresses", err)
		}
	}
	for _, p := range held {
		if r.unfinished(kp, p) {
			// Left to the sweep, which deletes it once Neutron is done.
			r.Ledger.ForgetPort(kp.Spec.PodUID, p.ID)
			continue
		}
		at := nestedOf(kp, p.ID)
		mode := r.modeOf(ctx, kp, at)
		// A port given up is not pooled, nor a nested-macvlan pod's, nor
		// one whose groups cannot be taken back to the pool's first (the
		// next pod would inherit them). A nested-vlan pod's goes back
		// still a subport of its trunk, with its VLAN id.
		if r.Pool != nil && nested.Poolable(mode) && !r.Ledger.Doomed(p.ID) && r.poolable(ctx, kp.Spec.PodUID, &p) &&
			r.Pool.Release(p, kp.Spec.PodUID) != Retire {
			continue // back in its node's pool, or another pod's now
		}
		if mode != nested.ModeNeutron {
			if err := r.Nested.Unplace(ctx, kp.Spec.PodNodeName, at, p); err != nil {
				return 0, r.fail(ctx, kp, "DetachFromVM", err)
			}
		}
		wait, err := r.deletePort(ctx, p.ID)
		if err != nil {
			return 0, r.fail(ctx, kp, "DeletePort", err)
		}
		if wait > 0 {
			return wait, nil
		}
		if r.Pool != nil {
			r.Pool.Forget(p.ID)
		}
	}
	r.Ledger.Forget(kp.Spec.PodUID)
	return 0, kit.RemoveFinalizer(ctx, r.Client, kp, kuryrv1.KuryrPortFinalizer)
}

// modeOf is how a released port sat: where the KuryrPort recorded it, else
// (only the ledger knew the port) its node's mode now. A node whose mode is
// not known (its label invalid) does not hold the port's deletion: its
// mode is "" (not pooled; Unplace finds nothing it could take off).
func (r *Reconciler) modeOf(ctx context.Context, kp *kuryrv1.KuryrPort, at *kuryrv1.NestedVIF) string {
	switch {
	case at != nil && at.Mode == kuryrv1.NestedVLAN:
		return nested.ModeVLAN
	case at != nil:
		return nested.ModeMacvlan
	}
	if r.Nested == nil {
		return nested.ModeNeutron
	}
	mode, err := r.Nested.Mode(ctx, kp.Spec.PodNodeName)
	if err != nil {
		return ""
	}
	return mode
}

// portsOf are the ports a KuryrPort holds: the one its status names and the
// one the ledger knows for its pod.
func (r *Reconciler) portsOf(kp *kuryrv1.KuryrPort) []neutron.Port {
	byID := map[string]neutron.Port{}
	if p, ok := r.Ledger.Lookup(kp.Spec.PodUID); ok {
		byID[p.ID] = p
	}
	for _, v := range kp.Status.VIFs {
		if _, ok := byID[v.PortID]; !ok {
			byID[v.PortID] = portFromVIF(v)
		}
	}
	out := make([]neutron.Port, 0, len(byID))
	for _, p := range byID {
		out = append(out, p)
	}
	return out
}

// unfinished reports whether p is a pod's port that the ledger knows only
// from a listing (at start, or Found), that no status names, and that Neutron may
// still have been creating then (neutron.CreateFinished): writing or
// deleting it could break it in OVN.
func (r *Reconciler) unfinished(kp *kuryrv1.KuryrPort, p neutron.Port) bool {
	for _, v := range kp.Status.VIFs {
		if v.PortID == p.ID {
			return false
		}
	}
	return r.Ledger.Listed(kp.Spec.PodUID) && !neutron.CreateFinished(&p, r.Settings.BindTimeout, time.Now())
}

// fail makes a Neutron error visible (condition, and an Event on the pod)
// and returns it, so the work queue retries with backoff.
func (r *Reconciler) fail(ctx context.Context, kp *kuryrv1.KuryrPort, action string, cause error) error {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: kp.Name, Namespace: kp.Namespace, UID: types.UID(kp.Spec.PodUID)}}
	return kit.Fail(ctx, r.Recorder, kit.Failure{Regarding: pod, Related: kp, Kind: string(neutron.Classify(cause)), Action: action,
		SetReady: func(reason, msg string) error { return r.setCondition(ctx, kp, metav1.ConditionFalse, reason, msg) }}, cause)
}

func (r *Reconciler) setCondition(ctx context.Context, kp *kuryrv1.KuryrPort, status metav1.ConditionStatus, reason, msg string) error {
	msg = kuryrv1.ConditionMessage(msg)
	patch := client.MergeFrom(kp.DeepCopy())
	if !meta.SetStatusCondition(&kp.Status.Conditions, metav1.Condition{
		Type: kuryrv1.ConditionReady, Status: status, Reason: reason, Message: msg,
	}) {
		return nil
	}
	return client.IgnoreNotFound(r.Status().Patch(ctx, kp, patch))
}
