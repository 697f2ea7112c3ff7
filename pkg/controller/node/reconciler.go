// Package node gives every node a management port: a Neutron port on the
// node subnet, bound to the node, that the node's kuryr-daemon plugs into
// br-int so that the node reaches its pods (and every other pod) without
// NAT, as the Kubernetes network model and the kubelet's probes require. It
// is for nodes that are Neutron/OVN chassis themselves (bare metal); nodes
// that are VMs on Neutron reach pods through their own ports. Every node
// also gets a refuse port on the service network (kind.go), through which
// ClusterIPs without a load balancer or an endpoint refuse connections.
package node

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kuryrv1 "github.com/kuryr-k8s/kuryr/api/v1"
	"github.com/kuryr-k8s/kuryr/pkg/controller/kuryrport"
	"github.com/kuryr-k8s/kuryr/pkg/neutron"
	"github.com/kuryr-k8s/kuryr/pkg/retry"
)

// portAPI is the Neutron seam of this reconciler.
type portAPI interface {
	CreatePort(ctx context.Context, s neutron.PortSpec) (*neutron.Port, error)
	GetPort(ctx context.Context, id string) (*neutron.Port, error)
	ListPorts(ctx context.Context, tags []string, status string) ([]neutron.Port, error)
	DeletePort(ctx context.Context, id string) error
	RouterOf(ctx context.Context, subnet string) (string, error)
	RouterSubnets(ctx context.Context, router string) ([]string, error)
}

// netInfo serves subnet, network and subnet pool details (cached).
type netInfo interface {
	Subnet(ctx context.Context, id string) (*neutron.Subnet, error)
	Network(ctx context.Context, id string) (*neutron.Network, error)
	SubnetPoolPrefixes(ctx context.Context, id string) ([]string, error)
}

// Reconciler keeps, for every node, one port of each kind (management,
// refuse) and the annotation that tells the node's daemon about it.
type Reconciler struct {
	client.Client
	Neutron  portAPI
	Info     netInfo
	Recorder kuryrport.Recorder
	Settings Settings
	unclear  neutron.Unanswered // kind/node of the last creates that went unanswered
}

// Reconcile converges the ports of one node, one of each kind.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var node corev1.Node
	err := r.Get(ctx, req.NamespacedName, &node)
	if apierrors.IsNotFound(err) || (err == nil && !node.DeletionTimestamp.IsZero()) {
		for _, k := range r.kinds() {
			if err := r.deletePorts(ctx, k, req.Name, ""); err != nil {
				return ctrl.Result{}, err
			}
		}
		return ctrl.Result{}, nil
	}
	if err != nil {
		return ctrl.Result{}, err
	}
	res := ctrl.Result{}
	for _, k := range r.kinds() {
		kr, err := r.converge(ctx, k, &node)
		if err != nil {
			return ctrl.Result{}, err
		}
		if kr.RequeueAfter > 0 && (res.RequeueAfter == 0 || kr.RequeueAfter < res.RequeueAfter) {
			res = kr
		}
	}
	return res, nil
}

// converge makes the node's port of kind k exist and its annotation say
// how to configure it (or removes both when k is off).
func (r *Reconciler) converge(ctx context.Context, k kind, node *corev1.Node) (ctrl.Result, error) {
	if k.subnet == "" {
		return ctrl.Result{}, r.disable(ctx, k, node)
	}
	sub, err := r.Info.Subnet(ctx, k.subnet)
	if err != nil {
		return ctrl.Result{}, r.fail(ctx, k, node, "FindSubnet", err)
	}
	np, ok := recorded(node.Annotations, k.annotation)
	if ok {
		ok, err = r.exists(ctx, np.PortID)
		if err != nil {
			return ctrl.Result{}, r.fail(ctx, k, node, "GetPort", err)
		}
	}
	if !ok {
		var res ctrl.Result
		if np, res, err = r.port(ctx, k, node, sub); err != nil || np.PortID == "" {
			return res, err
		}
	}
	// The port is checked again now and then: one deleted behind kuryr's
	// back is replaced.
	return ctrl.Result{RequeueAfter: verifyPeriod}, r.annotate(ctx, k, node, np, sub)
}

// annotate writes what the node must configure, if it changed.
func (r *Reconciler) annotate(ctx context.Context, k kind, node *corev1.Node, np kuryrv1.NodePort, sub *neutron.Subnet) error {
	n, err := r.Info.Network(ctx, sub.NetworkID)
	if err != nil {
		return r.fail(ctx, k, node, "FindNetwork", err)
	}
	np.MTU = n.MTU
	want, err := k.complete(ctx, np, sub)
	if err != nil {
		return r.fail(ctx, k, node, "DescribePort", err)
	}
	if have, ok := recorded(node.Annotations, k.annotation); ok && reflect.DeepEqual(have, want) {
		return nil
	}
	raw, err := json.Marshal(want)
	if err != nil {
		return err
	}
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{k.annotation: string(raw)}}})
	if err := r.Patch(ctx, node, client.RawPatch(types.MergePatchType, patch)); err != nil {
		return fmt.Errorf("annotate node %s: %w", node.Name, err)
	}
	return nil
}

// disable removes the node's port and annotation of a kind that is off
// (e.g. [neutron_defaults] node_subnet is empty).
func (r *Reconciler) disable(ctx context.Context, k kind, node *corev1.Node) error {
	if _, ok := node.Annotations[k.annotation]; !ok {
		return nil
	}
	if err := r.deletePorts(ctx, k, node.Name, ""); err != nil {
		return err
	}
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]any{k.annotation: nil}}})
	return client.IgnoreNotFound(r.Patch(ctx, node, client.RawPatch(types.MergePatchType, patch)))
}

// destinations are the CIDRs the node routes through its management port:
// the configured subnets and pools, and every subnet on the router of the
// node subnet (the cloud's networks that reach pods and Services, VMs'
// among them, which the node must answer through the same router, e.g.
// on its node ports).
func (r *Reconciler) destinations(ctx context.Context) ([]string, error) {
	var out []string
	subnets := slices.Clone(r.Settings.RoutedSubnets)
	router, err := r.Neutron.RouterOf(ctx, r.Settings.Subnet)
	if err != nil {
		return nil, err
	}
	if router != "" {
		attached, err := r.Neutron.RouterSubnets(ctx, router)
		if err != nil {
			return nil, err
		}
		subnets = append(subnets, slices.DeleteFunc(attached, func(id string) bool { return id == r.Settings.Subnet })...)
	}
	for _, id := range subnets {
		s, err := r.Info.Subnet(ctx, id)
		if err != nil {
			return nil, err
		}
		out = append(out, s.CIDR)
	}
	for _, id := range r.Settings.RoutedPools {
		prefixes, err := r.Info.SubnetPoolPrefixes(ctx, id)
		if err != nil {
			return nil, err
		}
		out = append(out, prefixes...)
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// fail makes an error visible as a Warning Event on the node and returns
// it for a retry with backoff.
func (r *Reconciler) fail(ctx context.Context, k kind, node *corev1.Node, action string, cause error) error {
	if retry.Stopping(ctx, cause) {
		return cause
	}
	r.Recorder.Eventf(node, nil, corev1.EventTypeWarning, string(neutron.Classify(cause)), action, "%s: %v", k.what, cause)
	return cause
}
