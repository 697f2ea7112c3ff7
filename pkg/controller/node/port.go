package node

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log"

	kuryrv1 "github.com/kuryr-k8s/kuryr/api/v1"
	"github.com/kuryr-k8s/kuryr/pkg/names"
	"github.com/kuryr-k8s/kuryr/pkg/neutron"
	"github.com/kuryr-k8s/kuryr/pkg/openstack"
)

// exists reports whether Neutron still has the port.
func (r *Reconciler) exists(ctx context.Context, id string) (bool, error) {
	_, err := r.Neutron.GetPort(ctx, id)
	if neutron.IsNotFound(err) {
		return false, nil
	}
	return err == nil, err
}

// port returns the node's port, found by its tags or created, once Neutron
// has bound it. A port Neutron could not bind, or never bound, is replaced.
func (r *Reconciler) port(ctx context.Context, k kind, node *corev1.Node, sub *neutron.Subnet) (kuryrv1.NodePort, ctrl.Result, error) {
	port, wait, err := r.ensurePort(ctx, k, node, sub)
	if err != nil {
		return kuryrv1.NodePort{}, ctrl.Result{}, r.fail(ctx, k, node, "CreatePort", err)
	}
	if port == nil {
		return kuryrv1.NodePort{}, ctrl.Result{RequeueAfter: wait}, nil
	}
	binding, cause := neutron.CheckBinding(port, r.Settings.BindTimeout)
	if binding {
		return kuryrv1.NodePort{}, ctrl.Result{RequeueAfter: time.Second}, nil
	}
	if cause != nil {
		if err := r.deletePorts(ctx, k, node.Name, ""); err != nil {
			return kuryrv1.NodePort{}, ctrl.Result{}, err
		}
		return kuryrv1.NodePort{}, ctrl.Result{}, r.fail(ctx, k, node, "BindPort", cause)
	}
	np, err := fromPort(port, sub)
	if err != nil {
		return np, ctrl.Result{}, r.fail(ctx, k, node, "DescribePort", err)
	}
	return np, ctrl.Result{}, nil
}

// ensurePort finds the node's port by its tags (after a crash, or a create
// that went unanswered) or creates it; duplicates are deleted. After an
// unanswered create it keeps looking for UnclearSettle before creating
// again (nil port, and how long to wait).
func (r *Reconciler) ensurePort(ctx context.Context, k kind, node *corev1.Node, sub *neutron.Subnet) (*neutron.Port, time.Duration, error) {
	ports, err := r.Neutron.ListPorts(ctx, []string{names.ClusterTag(r.Settings.Cluster), k.tag(node.Name)}, "")
	if err != nil {
		return nil, 0, err
	}
	key := k.prefix + node.Name
	if len(ports) > 0 {
		r.unclear.Clear(key)
		keep := pick(ports, r.Settings.BindTimeout, time.Now())
		if err := r.deletePorts(ctx, k, node.Name, keep.ID); err != nil {
			return nil, 0, err
		}
		return &keep, 0, nil
	}
	if pending, left := r.unclear.Pending(key); pending && left > 0 {
		return nil, left, nil
	}
	r.unclear.GiveUp(key)
	p, err := r.Neutron.CreatePort(ctx, k.portSpec(node.Name, sub, r.Settings))
	if err != nil {
		if p == nil && openstack.Unclear(err) {
			r.unclear.Mark(key)
		}
		return nil, 0, err
	}
	log.FromContext(ctx).Info("node port created", "kind", k.what, "node", node.Name, "port", p.ID)
	return p, 0, nil
}

// pick is the port a node keeps of the ones found by its tags: one Neutron
// is done creating before one it may still be creating (deleting the
// former for the latter would take a working port away), a bound one
// before one that is not, then the oldest. Pure.
func pick(ports []neutron.Port, bindTimeout time.Duration, now time.Time) neutron.Port {
	rank := func(p *neutron.Port) int {
		switch {
		case !neutron.CreateFinished(p, bindTimeout, now):
			return 2
		case p.VIFType == "" || p.VIFType == neutron.VIFTypeUnbound || p.VIFType == neutron.VIFTypeBindingFailed:
			return 1
		}
		return 0
	}
	best := 0
	for i := 1; i < len(ports); i++ {
		a, b := &ports[i], &ports[best]
		if ra, rb := rank(a), rank(b); ra < rb || (ra == rb && a.CreatedAt.Before(b.CreatedAt)) {
			best = i
		}
	}
	return ports[best]
}

// deletePorts deletes the node's ports of kind k but keep. One Neutron may
// still be creating (an unanswered create's, see neutron.CreateFinished) is
// not deleted here: deleted before, its OVN port could be made after the
// delete and stay. The sweep deletes it once done (no node's annotation
// names it), unless a later reconcile of the node adopts it first.
func (r *Reconciler) deletePorts(ctx context.Context, k kind, node, keep string) error {
	ports, err := r.Neutron.ListPorts(ctx, []string{names.ClusterTag(r.Settings.Cluster), k.tag(node)}, "")
	if err != nil {
		return err
	}
	for _, p := range ports {
		if p.ID == keep {
			continue
		}
		if !neutron.CreateFinished(&p, r.Settings.BindTimeout, time.Now()) {
			log.FromContext(ctx).Info("node port still being created: left to the sweep", "kind", k.what, "node", node, "port", p.ID)
			continue
		}
		if err := r.Neutron.DeletePort(ctx, p.ID); err != nil {
			return err
		}
		log.FromContext(ctx).Info("node port deleted", "kind", k.what, "node", node, "port", p.ID)
	}
	return nil
}
