// Package node gives every node a management port: a Neutron port on the
// node subnet, bound to the node, that the node's kuryr-daemon plugs into
// br-int so that the node reaches its pods (and every other pod) without
// NAT, as the Kubernetes network model and the kubelet's probes require. It
// is for nodes that are Neutron/OVN chassis themselves (bare metal); nodes
// that are VMs on Neutron reach pods through their own ports. Every node
// also gets a refuse port on the service network (kind.go), through which
// ClusterIPs without a load balancer or an endpoint refuse connections.
// VM nodes (package nested) get neither.
package node

import (
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kuryrv1 "github.com/kuryr-k8s/kuryr/api/v1"
	"github.com/kuryr-k8s/kuryr/pkg/clusternet"
	"github.com/kuryr-k8s/kuryr/pkg/controller/kit"
	"github.com/kuryr-k8s/kuryr/pkg/controller/nested"
	"github.com/kuryr-k8s/kuryr/pkg/neutron"
	"github.com/kuryr-k8s/kuryr/pkg/openstack"
)

// portAPI is the Neutron seam of this reconciler.
type portAPI interface {
	CreatePort(ctx context.Context, s neutron.PortSpec) (*neutron.Port, error)
	GetPort(ctx context.Context, id string) (*neutron.Port, error)
	ListPorts(ctx context.Context, tags []string, status string) ([]neutron.Port, error)
	ListPortIDsByOwner(ctx context.Context, tags, owners []string) (map[string]bool, error)
	DeletePort(ctx context.Context, id string) error
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
	Recorder kit.Recorder
	Settings Settings
	unclear  openstack.Unanswered // kind/node of the last creates that went unanswered
	warned   sync.Map             // node/what already told it does not get what (NotOnVMNode)
	downSeen sync.Map             // node -> when this controller first saw it not Ready
	now      func() time.Time     // time.Now unless a test sets it
	listed   listing              // the last listing of the node ports (verify.go)
}

// notOnVM tells a VM node, once per controller run, that it does not get
// what is configured for the others (every resync would repeat it). The
// action names what is skipped: events of one reason and action on one
// object are one series, whatever their notes.
func (r *Reconciler) notOnVM(node *corev1.Node, action, note string) {
	if _, told := r.warned.LoadOrStore(node.Name+"/"+action, true); told {
		return
	}
	r.Recorder.Eventf(node, nil, corev1.EventTypeWarning, "NotOnVMNode", action, "%s", note)
}

// Reconcile converges the ports of one node, one of each kind.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var node corev1.Node
	err := r.Get(ctx, req.NamespacedName, &node)
	if apierrors.IsNotFound(err) || (err == nil && !node.DeletionTimestamp.IsZero()) {
		r.downSeen.Delete(req.Name)
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
	if r.Settings.Pools && nested.OnVM(&node, r.Settings.PodVIFDriver) && !nested.PoolableNode(&node, r.Settings.PodVIFDriver) {
		r.notOnVM(&node, "SkipPool", "no port pool for this node's pods: it is a nested-macvlan VM node; their ports are made on demand")
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
	if nested.OnVM(node, r.Settings.PodVIFDriver) {
		// Configured, and not for this node: said, not ignored.
		r.notOnVM(node, k.skip, fmt.Sprintf("no %s on this node: it is a VM node (nested mode), whose pods sit on its VM's port", k.what))
		return ctrl.Result{}, r.disable(ctx, k, node)
	}
	up, wait, err := r.ready(ctx, k, node)
	if err != nil || !up {
		return ctrl.Result{}, err
	}
	sub, err := r.Info.Subnet(ctx, k.subnet)
	if err != nil {
		return ctrl.Result{}, r.fail(ctx, k, node, "FindSubnet", err)
	}
	np, ok := recorded(node.Annotations, k.annotation)
	if ok && !r.listed.shows(np.PortID) { // shown by the last listing of the node ports (verify.go): not read again
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
	// The port is checked again now and then (verify.go): one deleted
	// behind kuryr's back is replaced.
	return soonest(ctrl.Result{}, wait), r.annotate(ctx, k, node, np, sub)
}

// annotate writes what the node must configure, if it changed.
func (r *Reconciler) annotate(ctx context.Context, k kind, node *corev1.Node, np kuryrv1.NodePort, sub *neutron.Subnet) error {
	n, err := r.Info.Network(ctx, sub.NetworkID)
	if err != nil {
		return r.fail(ctx, k, node, "FindNetwork", err)
	}
	np.MTU = n.MTU
	want, err := k.complete(ctx, node, np, sub)
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
// the cluster's networks (every subnet on its router, the VMs' tenant
// networks among them, which the node answers back through it, e.g. on
// its node ports; the pods' subnet pool), but its own subnet, subnets a
// pool covers, and any that would take over one of the node's own
// addresses or is wider than a /8 (a /16 in IPv6): those are left out,
// with a Warning, rather than spoil every route.
func (r *Reconciler) destinations(ctx context.Context, node *corev1.Node) ([]string, error) {
	n, err := r.Settings.Networks(ctx)
	if err != nil {
		return nil, err
	}
	var own []netip.Addr
	for _, a := range node.Status.Addresses {
		if ip, err := netip.ParseAddr(a.Address); err == nil {
			own = append(own, ip)
		}
	}
	out := clusternet.Strings(n.Pools)
	var left []string
	for id, p := range n.Subnets {
		switch {
		case id == r.Settings.Subnet || covered(p, n.Pools):
		case p.Bits() < minRoute(p) || slices.ContainsFunc(own, p.Contains):
			left = append(left, p.String())
		default:
			out = append(out, p.String())
		}
	}
	if len(left) > 0 {
		slices.Sort(left)
		r.Recorder.Eventf(node, nil, corev1.EventTypeWarning, "RouteLeftOut", "Route",
			"management port: no route to %s (wider than a /8, or holding one of the node's own addresses)", strings.Join(left, ", "))
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

func covered(p netip.Prefix, by []netip.Prefix) bool {
	return slices.ContainsFunc(by, func(q netip.Prefix) bool { return q.Bits() <= p.Bits() && q.Contains(p.Addr()) })
}

func minRoute(p netip.Prefix) int {
	if p.Addr().Is4() {
		return 8
	}
	return 16
}

// fail makes an error visible as a Warning Event on the node and returns
// it for a retry with backoff.
func (r *Reconciler) fail(ctx context.Context, k kind, node *corev1.Node, action string, cause error) error {
	return kit.Fail(ctx, r.Recorder, kit.Failure{Regarding: node, Kind: string(neutron.Classify(cause)), Action: action,
		Note: fmt.Sprintf("%s: %v", k.what, cause)}, cause)
}
