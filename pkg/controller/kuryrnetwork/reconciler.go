// Package kuryrnetwork gives a namespace its own Neutron network, a subnet
// from the pod subnet pool and an interface on the cluster router, and
// removes them when the namespace goes.
package kuryrnetwork

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"

	kuryrv1 "github.com/kuryr-k8s/kuryr/api/v1"
	"github.com/kuryr-k8s/kuryr/pkg/controller/kuryrport"
	"github.com/kuryr-k8s/kuryr/pkg/neutron"
	"github.com/kuryr-k8s/kuryr/pkg/retry"
)

// networks is the Neutron seam of this reconciler.
type networks interface {
	FindNetwork(ctx context.Context, name, project string) (*neutron.Network, error)
	CreateNetwork(ctx context.Context, name, project string, tags []string) (*neutron.Network, error)
	EnsureSubnetFromPool(ctx context.Context, networkID, name, project, pool string, tags []string) (*neutron.Subnet, error)
	EnsureRouterInterface(ctx context.Context, router, subnet string) error
	RemoveRouterInterface(ctx context.Context, router, subnet string) error
	DeleteNetwork(ctx context.Context, id string) error
}

// Settings are the parts of kuryr.conf this reconciler uses.
type Settings struct {
	Cluster, Router, SubnetPool string
	ExtraTags                   []string
}

// Reconciler converges KuryrNetworks and Neutron networks.
type Reconciler struct {
	client.Client
	Neutron  networks
	Recorder kuryrport.Recorder
	Settings Settings
}

// NetworkName is the deterministic name of a namespace's network, so that a
// network created before a crash is found again by name.
func NetworkName(cluster, ns string) string { return "kuryr-" + cluster + "-ns-" + ns }

func (r *Reconciler) tags(ns string) []string {
	return append([]string{neutron.ClusterTag(r.Settings.Cluster), neutron.NamespaceTag(ns)}, r.Settings.ExtraTags...)
}

// Reconcile creates or removes the network of one namespace.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var kn kuryrv1.KuryrNetwork
	if err := r.Get(ctx, req.NamespacedName, &kn); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !kn.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, r.finalize(ctx, &kn)
	}
	if kn.Status.Ready() {
		return ctrl.Result{}, nil
	}
	return ctrl.Result{}, r.ensure(ctx, &kn)
}

func (r *Reconciler) ensure(ctx context.Context, kn *kuryrv1.KuryrNetwork) error {
	orig := kn.DeepCopy()
	if !controllerutil.ContainsFinalizer(kn, kuryrv1.KuryrNetworkFinalizer) {
		controllerutil.AddFinalizer(kn, kuryrv1.KuryrNetworkFinalizer)
		if err := r.Patch(ctx, kn, client.MergeFrom(orig)); err != nil {
			return fmt.Errorf("add finalizer: %w", err)
		}
		orig = kn.DeepCopy()
	}
	ns, name := kn.Spec.NsName, NetworkName(r.Settings.Cluster, kn.Spec.NsName)
	net, err := r.Neutron.FindNetwork(ctx, name, kn.Spec.ProjectID)
	if err == nil && net == nil {
		net, err = r.Neutron.CreateNetwork(ctx, name, kn.Spec.ProjectID, r.tags(ns))
	}
	if err != nil {
		return r.fail(ctx, kn, orig, "CreateNetwork", err)
	}
	sub, err := r.Neutron.EnsureSubnetFromPool(ctx, net.ID, name, kn.Spec.ProjectID, r.Settings.SubnetPool, r.tags(ns))
	if err != nil {
		return r.fail(ctx, kn, orig, "CreateSubnet", err)
	}
	// Record what exists before attaching, so a failure here cannot orphan it.
	kn.Status.NetID, kn.Status.SubnetID, kn.Status.SubnetCIDR = net.ID, sub.ID, sub.CIDR
	if err := r.Neutron.EnsureRouterInterface(ctx, r.Settings.Router, sub.ID); err != nil {
		return r.fail(ctx, kn, orig, "AttachRouter", err)
	}
	kn.Status.RouterID = r.Settings.Router
	meta.SetStatusCondition(&kn.Status.Conditions, metav1.Condition{
		Type: kuryrv1.ConditionReady, Status: metav1.ConditionTrue, Reason: kuryrv1.ReasonCreated,
		Message: fmt.Sprintf("network %s, subnet %s (%s)", net.ID, sub.ID, sub.CIDR),
	})
	if err := r.Status().Patch(ctx, kn, client.MergeFrom(orig)); err != nil {
		return fmt.Errorf("write status: %w", err)
	}
	log.FromContext(ctx).Info("namespace network ready", "namespace", ns, "network", net.ID, "cidr", sub.CIDR)
	return nil
}

// finalize detaches and deletes the network. Neutron refuses while pod
// ports remain; the error requeues until their KuryrPorts are gone.
func (r *Reconciler) finalize(ctx context.Context, kn *kuryrv1.KuryrNetwork) error {
	if !controllerutil.ContainsFinalizer(kn, kuryrv1.KuryrNetworkFinalizer) {
		return nil
	}
	orig := kn.DeepCopy()
	netID := kn.Status.NetID
	if netID == "" {
		// Created before a crash, never recorded: find it by name.
		net, err := r.Neutron.FindNetwork(ctx, NetworkName(r.Settings.Cluster, kn.Spec.NsName), kn.Spec.ProjectID)
		if err != nil {
			return r.fail(ctx, kn, orig, "DeleteNetwork", err)
		}
		if net != nil {
			netID = net.ID
			if len(net.Subnets) > 0 {
				kn.Status.SubnetID = net.Subnets[0]
			}
		}
	}
	if kn.Status.SubnetID != "" {
		if err := r.Neutron.RemoveRouterInterface(ctx, r.Settings.Router, kn.Status.SubnetID); err != nil {
			return r.fail(ctx, kn, orig, "DetachRouter", err)
		}
	}
	if netID != "" {
		if err := r.Neutron.DeleteNetwork(ctx, netID); err != nil {
			return r.fail(ctx, kn, orig, "DeleteNetwork", err)
		}
	}
	controllerutil.RemoveFinalizer(kn, kuryrv1.KuryrNetworkFinalizer)
	if err := r.Patch(ctx, kn, client.MergeFrom(orig)); err != nil {
		return client.IgnoreNotFound(err)
	}
	log.FromContext(ctx).Info("namespace network deleted", "namespace", kn.Spec.NsName, "network", netID)
	return nil
}

func (r *Reconciler) fail(ctx context.Context, kn, orig *kuryrv1.KuryrNetwork, action string, cause error) error {
	if retry.Stopping(ctx, cause) {
		return cause
	}
	kind := string(neutron.Classify(cause))
	meta.SetStatusCondition(&kn.Status.Conditions, metav1.Condition{
		Type: kuryrv1.ConditionReady, Status: metav1.ConditionFalse, Reason: kind, Message: kuryrv1.ConditionMessage(cause.Error()),
	})
	if err := r.Status().Patch(ctx, kn, client.MergeFrom(orig)); err != nil {
		log.FromContext(ctx).Error(err, "could not record the failure on the KuryrNetwork")
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: kn.Spec.NsName}}
	r.Recorder.Eventf(ns, kn, corev1.EventTypeWarning, kind, action, "%v", cause)
	return cause
}

// SetupWithManager registers the reconciler.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, workers int) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named("kuryrnetwork").
		For(&kuryrv1.KuryrNetwork{}).
		WithOptions(controller.Options{MaxConcurrentReconciles: workers, RateLimiter: kuryrport.RateLimiter()}).
		Complete(r)
}
