// Package kuryrnetwork gives a namespace (namespace mode) or a node (node
// mode) its own Neutron network, a subnet from the pod subnet pool and an
// interface on the cluster router, and removes them when the namespace or
// the node goes, once no port uses them.
package kuryrnetwork

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	kuryrv1 "github.com/kuryr-k8s/kuryr/api/v1"
	"github.com/kuryr-k8s/kuryr/pkg/controller/kit"
	"github.com/kuryr-k8s/kuryr/pkg/neutron"
	"github.com/kuryr-k8s/kuryr/pkg/openstack"
)

// networks is the Neutron seam of this reconciler.
type networks interface {
	FindNetwork(ctx context.Context, name, project string) (*neutron.Network, error)
	CreateNetwork(ctx context.Context, name, project string, tags []string) (*neutron.Network, error)
	EnsureSubnetFromPool(ctx context.Context, networkID, name, project, pool string, tags []string) (*neutron.Subnet, error)
	EnsureRouterInterface(ctx context.Context, router, subnet string) error
	RemoveRouterInterface(ctx context.Context, router, subnet string) error
	NetworkUsers(ctx context.Context, networkID string) ([]neutron.Port, error)
	DeleteNetwork(ctx context.Context, id string) error
}

// Settings are the parts of kuryr.conf this reconciler uses.
type Settings struct {
	Cluster, Router, SubnetPool string
	ExtraTags                   []string
	// Namespaces and Nodes say which KuryrNetworks get a network: the
	// namespaces' (pod_subnets_driver = namespace) or the nodes' (node).
	// The others, left from another mode, are only finalized: their
	// networks are removed when they are deleted, never created.
	Namespaces, Nodes bool
}

// Reconciler converges KuryrNetworks and Neutron networks.
type Reconciler struct {
	client.Client
	Neutron  networks
	Recorder kit.Recorder
	Settings Settings
	// APIReader reads Nodes from the API server, not the cache, when a
	// node's KuryrNetwork is finalized (nil: the client).
	APIReader client.Reader
	unclear   openstack.Unanswered // network names whose last create went unanswered
}

// usersRecheck is how often a network being removed is looked at again
// while ports remain on it (its pods' KuryrPorts are being finalized).
const usersRecheck = 5 * time.Second

// Reconcile creates or removes the network of one namespace or node.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var kn kuryrv1.KuryrNetwork
	if err := r.Get(ctx, req.NamespacedName, &kn); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !kn.DeletionTimestamp.IsZero() {
		return r.finalize(ctx, &kn)
	}
	if kn.Status.Ready() || !r.serves(&kn) {
		return ctrl.Result{}, nil
	}
	return r.ensure(ctx, &kn)
}

// serves says whether kn gets a network in this mode.
func (r *Reconciler) serves(kn *kuryrv1.KuryrNetwork) bool {
	if kn.Spec.NodeName != "" {
		return r.Settings.Nodes
	}
	return r.Settings.Namespaces
}

func (r *Reconciler) ensure(ctx context.Context, kn *kuryrv1.KuryrNetwork) (ctrl.Result, error) {
	if err := kit.AddFinalizer(ctx, r.Client, kn, kuryrv1.KuryrNetworkFinalizer); err != nil {
		return ctrl.Result{}, err
	}
	orig := kn.DeepCopy()
	o := ownerOf(kn, r.Settings)
	net, wait, err := r.network(ctx, kn, o)
	switch {
	case err != nil:
		return ctrl.Result{}, r.fail(ctx, kn, orig, "CreateNetwork", err)
	case net == nil:
		return ctrl.Result{RequeueAfter: wait}, nil
	}
	sub, err := r.Neutron.EnsureSubnetFromPool(ctx, net.ID, o.network, kn.Spec.ProjectID, r.Settings.SubnetPool, o.tags)
	if err != nil {
		return ctrl.Result{}, r.fail(ctx, kn, orig, "CreateSubnet", err)
	}
	// Record what exists before attaching, so a failure here cannot orphan it.
	kn.Status.NetID, kn.Status.SubnetID, kn.Status.SubnetCIDR = net.ID, sub.ID, sub.CIDR
	if err := r.Neutron.EnsureRouterInterface(ctx, r.Settings.Router, sub.ID); err != nil {
		return ctrl.Result{}, r.fail(ctx, kn, orig, "AttachRouter", err)
	}
	kn.Status.RouterID = r.Settings.Router
	meta.SetStatusCondition(&kn.Status.Conditions, metav1.Condition{
		Type: kuryrv1.ConditionReady, Status: metav1.ConditionTrue, Reason: kuryrv1.ReasonCreated,
		Message: fmt.Sprintf("network %s, subnet %s (%s)", net.ID, sub.ID, sub.CIDR),
	})
	if err := r.Status().Patch(ctx, kn, client.MergeFrom(orig)); err != nil {
		return ctrl.Result{}, fmt.Errorf("write status: %w", err)
	}
	log.FromContext(ctx).Info(o.kind+" network ready", o.kind, o.name, "network", net.ID, "cidr", sub.CIDR)
	return ctrl.Result{}, nil
}

// network returns the owner's network: found by name (made before a crash,
// or by a create whose answer was lost), else created. After a create that
// went unanswered it keeps looking for openstack.UnclearSettle before
// creating again (nil and how long to wait): Neutron may still commit it,
// and a second network of the same name would be one too many.
func (r *Reconciler) network(ctx context.Context, kn *kuryrv1.KuryrNetwork, o owner) (*neutron.Network, time.Duration, error) {
	net, err := r.Neutron.FindNetwork(ctx, o.network, kn.Spec.ProjectID)
	if err != nil || net != nil {
		if net != nil {
			r.unclear.Clear(o.network)
		}
		return net, 0, err
	}
	if pending, left := r.unclear.Pending(o.network); pending && left > 0 {
		return nil, left, nil
	}
	r.unclear.GiveUp(o.network)
	net, err = r.Neutron.CreateNetwork(ctx, o.network, kn.Spec.ProjectID, o.tags)
	if net == nil && openstack.Unclear(err) {
		r.unclear.Mark(o.network)
	}
	return net, 0, err
}

// fail makes a Neutron error visible (condition, with what the status
// gained since orig, and an Event on the namespace or node) and returns
// it, so the work queue retries with backoff.
func (r *Reconciler) fail(ctx context.Context, kn, orig *kuryrv1.KuryrNetwork, action string, cause error) error {
	return kit.Fail(ctx, r.Recorder, kit.Failure{Regarding: ownerOf(kn, r.Settings).regarding, Related: kn,
		Kind: string(neutron.Classify(cause)), Action: action,
		SetReady: func(reason, msg string) error {
			meta.SetStatusCondition(&kn.Status.Conditions, metav1.Condition{
				Type: kuryrv1.ConditionReady, Status: metav1.ConditionFalse, Reason: reason, Message: kuryrv1.ConditionMessage(msg),
			})
			return r.Status().Patch(ctx, kn, client.MergeFrom(orig))
		}}, cause)
}

// SetupWithManager registers the reconciler.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, workers int) error {
	return kit.Controller(ctrl.NewControllerManagedBy(mgr).
		Named("kuryrnetwork").
		For(&kuryrv1.KuryrNetwork{}), workers).
		Complete(kit.RetryConflicts(r))
}
