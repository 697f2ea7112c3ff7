package node

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log"

	kuryrv1 "github.com/kuryr-k8s/kuryr/api/v1"
	"github.com/kuryr-k8s/kuryr/pkg/controller/kuryrport"
	"github.com/kuryr-k8s/kuryr/pkg/neutron"
)

// verifyPeriod is how often a node's annotated port is checked in Neutron.
const verifyPeriod = 5 * time.Minute

// unclearCreates remembers the nodes whose last port create went
// unanswered: their port is looked up for a while before another is made.
type unclearCreates struct {
	mu    sync.Mutex
	since map[string]time.Time
}

func (u *unclearCreates) mark(node string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.since == nil {
		u.since = map[string]time.Time{}
	}
	if _, ok := u.since[node]; !ok {
		u.since[node] = time.Now()
	}
}

// wait is how long to keep looking before creating again (0: create).
func (u *unclearCreates) wait(node string) time.Duration {
	u.mu.Lock()
	defer u.mu.Unlock()
	t, ok := u.since[node]
	if !ok {
		return 0
	}
	w := kuryrport.UnclearSettle - time.Since(t)
	if w <= 0 {
		delete(u.since, node)
		return 0
	}
	return w
}

func (u *unclearCreates) clear(node string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	delete(u.since, node)
}

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
func (r *Reconciler) port(ctx context.Context, node *corev1.Node, sub *neutron.Subnet) (kuryrv1.NodePort, ctrl.Result, error) {
	port, wait, err := r.ensurePort(ctx, node, sub)
	if err != nil {
		return kuryrv1.NodePort{}, ctrl.Result{}, r.fail(node, "CreatePort", err)
	}
	if port == nil {
		return kuryrv1.NodePort{}, ctrl.Result{RequeueAfter: wait}, nil
	}
	var cause error
	switch {
	case port.VIFType == neutron.VIFTypeBindingFailed:
		cause = fmt.Errorf("neutron could not bind the management port of node %q "+
			"(is an OVN chassis or Neutron agent registered with that hostname?)", node.Name)
	case port.VIFType != neutron.VIFTypeUnbound && port.VIFType != "":
	case port.CreatedAt.IsZero() || time.Since(port.CreatedAt) < r.Settings.BindTimeout:
		return kuryrv1.NodePort{}, ctrl.Result{RequeueAfter: time.Second}, nil
	default:
		cause = fmt.Errorf("neutron never bound the management port %s of node %q; replacing it", port.ID, node.Name)
	}
	if cause != nil {
		if err := r.deletePorts(ctx, node.Name, ""); err != nil {
			return kuryrv1.NodePort{}, ctrl.Result{}, err
		}
		return kuryrv1.NodePort{}, ctrl.Result{}, r.fail(node, "BindPort", cause)
	}
	np, err := fromPort(port, sub)
	if err != nil {
		return np, ctrl.Result{}, r.fail(node, "DescribePort", err)
	}
	return np, ctrl.Result{}, nil
}

// ensurePort finds the node's port by its tags (after a crash, or a create
// that went unanswered) or creates it; duplicates are deleted. After an
// unanswered create it keeps looking for UnclearSettle before creating
// again (nil port, and how long to wait).
func (r *Reconciler) ensurePort(ctx context.Context, node *corev1.Node, sub *neutron.Subnet) (*neutron.Port, time.Duration, error) {
	ports, err := r.Neutron.ListPorts(ctx, []string{neutron.ClusterTag(r.Settings.Cluster), neutron.NodeTag(node.Name)}, "")
	if err != nil {
		return nil, 0, err
	}
	if len(ports) > 0 {
		r.unclear.clear(node.Name)
		keep := ports[0]
		if err := r.deletePorts(ctx, node.Name, keep.ID); err != nil {
			return nil, 0, err
		}
		return &keep, 0, nil
	}
	if wait := r.unclear.wait(node.Name); wait > 0 {
		return nil, wait, nil
	}
	p, err := r.Neutron.CreatePort(ctx, portSpec(node.Name, sub, r.Settings))
	if err != nil {
		if p == nil && neutron.Unclear(err) {
			r.unclear.mark(node.Name)
		}
		return nil, 0, err
	}
	log.FromContext(ctx).Info("node management port created", "node", node.Name, "port", p.ID)
	return p, 0, nil
}

// deletePorts deletes the node's management ports but keep.
func (r *Reconciler) deletePorts(ctx context.Context, node, keep string) error {
	ports, err := r.Neutron.ListPorts(ctx, []string{neutron.ClusterTag(r.Settings.Cluster), neutron.NodeTag(node)}, "")
	if err != nil {
		return err
	}
	for _, p := range ports {
		if p.ID == keep {
			continue
		}
		if err := r.Neutron.DeletePort(ctx, p.ID); err != nil {
			return err
		}
		log.FromContext(ctx).Info("node management port deleted", "node", node, "port", p.ID)
	}
	return nil
}
