package policy

import (
	"context"
	"errors"
	"fmt"
	"time"

	"golang.org/x/sync/errgroup"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	kuryrv1 "github.com/kuryr-k8s/kuryr/api/v1"
	"github.com/kuryr-k8s/kuryr/pkg/controller/kit"
	"github.com/kuryr-k8s/kuryr/pkg/names"
	"github.com/kuryr-k8s/kuryr/pkg/neutron"
)

// groupAPI is the Neutron seam of the KuryrNetworkPolicy reconciler.
type groupAPI interface {
	addressAPI
	FindSecurityGroups(ctx context.Context, tags []string) ([]neutron.SecurityGroup, error)
	SecurityGroupsNamed(ctx context.Context, name string) ([]neutron.SecurityGroup, error)
	GetSecurityGroup(ctx context.Context, id string) (*neutron.SecurityGroup, error)
	CreateSecurityGroup(ctx context.Context, name, description, project string, tags []string) (*neutron.SecurityGroup, error)
	TagSecurityGroup(ctx context.Context, id string, tags []string) error
	DeleteSecurityGroup(ctx context.Context, id string) error
	CreateRule(ctx context.Context, sg, project string, r neutron.Rule) error
	CreateRules(ctx context.Context, sg, project string, rs []neutron.Rule) error
	DeleteRule(ctx context.Context, id string) error
}

// Settings are what the KuryrNetworkPolicy reconciler creates groups with.
type Settings struct {
	Cluster   string
	ProjectID string
}

// GroupReconciler converges a KuryrNetworkPolicy's spec and its Neutron
// security group and peer groups. It is the only writer of those objects
// (peer groups are shared: a per-peer lock serialises their creation and
// deletion) and of the KuryrNetworkPolicy status; the pods' ports get the
// groups from the KuryrPort reconciler.
type GroupReconciler struct {
	client.Client
	Neutron  groupAPI
	Recorder kit.Recorder
	Settings Settings
	// Mode: peers as address groups or security groups (nil: security
	// groups).
	Mode PeerMode
	// Locks serialise the work on each peer group (shared with the
	// address gate).
	Locks *PeerLocks
}

// inUseRetry: a group is deleted once no port carries it any more, which
// the KuryrPort reconciler sees to at the same time.
const inUseRetry = time.Second

// Reconcile applies a KuryrNetworkPolicy, or takes its groups away once it
// is being deleted.
func (r *GroupReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var knp kuryrv1.KuryrNetworkPolicy
	if err := r.Get(ctx, req.NamespacedName, &knp); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !knp.DeletionTimestamp.IsZero() {
		return r.finalize(ctx, &knp)
	}
	if err := kit.AddFinalizer(ctx, r.Client, &knp, kuryrv1.KuryrNetworkPolicyFinalizer); err != nil {
		return ctrl.Result{}, err
	}
	res, err := r.apply(ctx, &knp)
	if err != nil {
		kit.Fail(ctx, r.Recorder, kit.Failure{Regarding: &knp, Kind: string(neutron.Classify(err)), Action: "ApplyPolicy",
			SetReady: func(reason, msg string) error { return r.condition(ctx, &knp, metav1.ConditionFalse, reason, msg) }}, err)
	}
	return res, err
}

// apply: the group and the peers' groups (security groups, or address
// groups where Neutron enforces them: PeerMode); the rules the policy no
// longer has are deleted (a new group's default egress rules among them: a
// rule less denies, never opens), its new rules added; then the group's id
// is recorded, so pods' ports get a new group only once it is exactly the
// policy's; then the peers the rules no longer name are released (all
// those of the other kind). A group made but not recorded yet (a crash) is
// found again by its tags (an address group by its name).
func (r *GroupReconciler) apply(ctx context.Context, knp *kuryrv1.KuryrNetworkPolicy) (ctrl.Result, error) {
	addresses := r.addressMode(knp)
	// Peers moving between kinds: the new rules admit the same pods, so
	// they are added before the old ones go (no moment denies them).
	switching := len(knp.Spec.Peers) > 0 && addresses != (knp.Status.PeerKind == kuryrv1.PeerKindAddressGroups) &&
		len(knp.Status.PeerGroups)+len(knp.Status.PeerAddressGroups) > 0
	// The group and the peers' groups are made at the same time.
	var sg *neutron.SecurityGroup
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() (err error) {
		sg, err = r.ensureGroup(gctx, knp)
		return err
	})
	peers, err := r.ensurePeers(gctx, knp, r.kindOf(addresses))
	// The first failure cancels gctx: report it, not the cancellation.
	if werr := g.Wait(); err == nil || (werr != nil && errors.Is(err, context.Canceled)) {
		err = werr
	}
	if err != nil {
		return ctrl.Result{}, err
	}
	if err := r.record(ctx, knp, r.kindOf(addresses), peers); err != nil {
		return ctrl.Result{}, err
	}
	want, missing := GroupRules(knp.Spec, peers, addresses)
	if len(missing) > 0 {
		return ctrl.Result{}, fmt.Errorf("the groups of peers %v are missing", missing)
	}
	// Ports carry security-group peers while the rules may name them:
	// from before the rules name them to after they no longer do.
	if !addresses {
		if err := r.recordPeerKind(ctx, knp, ""); err != nil {
			return ctrl.Result{}, err
		}
	}
	sync := r.ruleSync()
	sync.AddFirst = switching
	added, deleted, err := neutron.SyncRules(ctx, r.Neutron, sg, want, sync)
	if err != nil {
		return ctrl.Result{}, err
	}
	if addresses {
		if err := r.recordPeerKind(ctx, knp, kuryrv1.PeerKindAddressGroups); err != nil {
			return ctrl.Result{}, err
		}
	}
	if err := r.recordGroup(ctx, knp, sg.ID); err != nil {
		return ctrl.Result{}, err
	}
	if added+deleted > 0 {
		log.FromContext(ctx).Info("rules applied", "group", sg.ID, "added", added, "deleted", deleted, "addressGroups", addresses)
	}
	pending, err := r.release(ctx, knp, r.securityPeers(), addresses, !addresses)
	if err != nil {
		return ctrl.Result{}, err
	}
	pendingAddresses, err := r.release(ctx, knp, r.addressPeers(), !addresses, addresses)
	if err != nil {
		return ctrl.Result{}, err
	}
	res := ctrl.Result{}
	if pending || pendingAddresses {
		res.RequeueAfter = inUseRetry
	}
	kind := "security groups"
	if addresses {
		kind = "address groups"
	}
	return res, r.condition(ctx, knp, metav1.ConditionTrue, "Applied",
		fmt.Sprintf("%d rules, %d peers (%s)", len(want), len(knp.Spec.Peers), kind))
}

// kindOf is the peer kind in force.
func (r *GroupReconciler) kindOf(addresses bool) peerKind {
	if addresses {
		return r.addressPeers()
	}
	return r.securityPeers()
}

func (r *GroupReconciler) recordPeerKind(ctx context.Context, knp *kuryrv1.KuryrNetworkPolicy, kind string) error {
	if knp.Status.PeerKind == kind {
		return nil
	}
	patch := client.MergeFrom(knp.DeepCopy())
	knp.Status.PeerKind = kind
	if err := r.Status().Patch(ctx, knp, patch); err != nil {
		return fmt.Errorf("record the peers' kind: %w", err)
	}
	return nil
}

// policyUID is the UID of the NetworkPolicy that owns the object (its own
// UID for one made by hand).
func policyUID(knp *kuryrv1.KuryrNetworkPolicy) string {
	if ref := metav1.GetControllerOf(knp); ref != nil {
		return string(ref.UID)
	}
	return string(knp.UID)
}

func (r *GroupReconciler) tags(knp *kuryrv1.KuryrNetworkPolicy) []string {
	return []string{names.ClusterTag(r.Settings.Cluster), names.PolicyTag(policyUID(knp))}
}

// ensureGroup returns the policy's security group: the recorded one, one
// found by tags or by name (tagged then), or a new one.
func (r *GroupReconciler) ensureGroup(ctx context.Context, knp *kuryrv1.KuryrNetworkPolicy) (*neutron.SecurityGroup, error) {
	return neutron.EnsureGroup(ctx, r.Neutron, neutron.GroupSpec{Recorded: knp.Status.SecurityGroupID, Tags: r.tags(knp),
		Name: names.PolicyGroupName(policyUID(knp)), ByName: true, Project: r.Settings.ProjectID,
		Description: fmt.Sprintf("kuryr: NetworkPolicy %s/%s", knp.Namespace, knp.Name)})
}

// ruleSync: a policy's and a peer's groups hold rules of both directions
// (a new group's default egress rules go), deleted several at a time.
func (r *GroupReconciler) ruleSync() neutron.RuleSync {
	return neutron.RuleSync{Project: r.Settings.ProjectID, Directions: []string{Ingress, Egress}, Deletes: neutronCalls}
}

func (r *GroupReconciler) recordGroup(ctx context.Context, knp *kuryrv1.KuryrNetworkPolicy, id string) error {
	if id == knp.Status.SecurityGroupID {
		return nil
	}
	patch := client.MergeFrom(knp.DeepCopy())
	knp.Status.SecurityGroupID = id
	if err := r.Status().Patch(ctx, knp, patch); err != nil {
		return fmt.Errorf("record security group %s: %w", id, err)
	}
	return nil
}

// neutronCalls bounds the Neutron calls of one reconcile in flight at
// once.
const neutronCalls = 4

func (r *GroupReconciler) condition(ctx context.Context, knp *kuryrv1.KuryrNetworkPolicy, status metav1.ConditionStatus, reason, msg string) error {
	patch := client.MergeFrom(knp.DeepCopy())
	if !meta.SetStatusCondition(&knp.Status.Conditions, metav1.Condition{Type: kuryrv1.ConditionReady, Status: status,
		Reason: reason, Message: kuryrv1.ConditionMessage(msg), ObservedGeneration: knp.Generation}) {
		return nil
	}
	return client.IgnoreNotFound(r.Status().Patch(ctx, knp, patch))
}
