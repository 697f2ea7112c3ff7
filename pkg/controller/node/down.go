package node

import (
	"context"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log"
)

// DownAfter is how long a node is not Ready before its refuse port is
// removed. Every refuse namespace answers with one MAC, and the switch
// sends frames for it to the port it last learnt it from: a node that is
// down while its port stays would take every refusal of the cluster with
// it. Removed, the switch forgets the MAC and floods the next frame to the
// other nodes' refuse ports. The port comes back when the node is Ready.
const DownAfter = time.Minute

// notReadyFor is how long the node has been not Ready after having been
// Ready, by its Ready condition: 0 when it is Ready, tells nothing yet, or
// has not been Ready since it registered (a kubelet registers NotReady; a
// slow first start is not a node gone down). Pure.
func notReadyFor(node *corev1.Node, now time.Time) time.Duration {
	c := readyCondition(node)
	if c == nil {
		return 0
	}
	since := c.LastTransitionTime.Time
	if c.Status == corev1.ConditionTrue || since.IsZero() || since.Before(node.CreationTimestamp.Add(DownAfter)) {
		return 0
	}
	return max(now.Sub(since), time.Nanosecond)
}

// downFor is how long the node has been down, the shorter of what its
// condition says (whose time comes from the kubelet's clock, and starts
// again when False turns Unknown) and of how long this controller has
// seen it not Ready. Forgotten when it is Ready.
func (r *Reconciler) downFor(node *corev1.Node, now time.Time) time.Duration {
	d := notReadyFor(node, now)
	if d == 0 {
		r.downSeen.Delete(node.Name)
		return 0
	}
	seen, _ := r.downSeen.LoadOrStore(node.Name, now)
	return max(min(d, now.Sub(seen.(time.Time))), time.Nanosecond)
}

// ready reports whether the node may keep a port of kind k: a kind needed
// only while the node is up (the refuse port) is removed once the node has
// been down DownAfter, unless half the nodes or more are not Ready (the
// control plane lost them, not their dataplane: the Kubernetes node
// lifecycle controller stops evicting then too); before that, wait says
// when to look again. A node not Ready that has none gets none.
func (r *Reconciler) ready(ctx context.Context, k kind, node *corev1.Node) (ok bool, wait time.Duration, err error) {
	if !k.whileUp {
		return true, 0, nil
	}
	now := time.Now
	if r.now != nil {
		now = r.now
	}
	d := r.downFor(node, now())
	_, annotated := node.Annotations[k.annotation]
	switch {
	case d == 0:
		return true, 0, nil
	case !annotated: // a node not Ready gets none (its condition's clock starts again when False turns Unknown)
	case d < DownAfter:
		return true, DownAfter - d, nil
	default:
		if many, err := r.manyDown(ctx); err != nil || many {
			return true, DownAfter, err
		}
	}
	if err := r.disable(ctx, k, node); err != nil {
		return false, 0, err
	}
	if annotated {
		log.FromContext(ctx).Info("node not Ready: its "+k.what+" removed", "node", node.Name, "notReadyFor", d.Round(time.Second).String())
		r.Recorder.Eventf(node, nil, corev1.EventTypeNormal, "NodeDown", "Remove"+strings.TrimPrefix(k.skip, "Skip"),
			"%s removed: the node has not been Ready for %s (the other nodes answer for it); it comes back when the node is Ready",
			k.what, d.Round(time.Second))
	}
	return false, 0, nil
}

// manyDown reports whether half the nodes or more are not Ready.
func (r *Reconciler) manyDown(ctx context.Context) (bool, error) {
	var nodes corev1.NodeList
	if err := r.List(ctx, &nodes); err != nil {
		return false, err
	}
	down := 0
	for i := range nodes.Items {
		if readiness(&nodes.Items[i]) != corev1.ConditionTrue {
			down++
		}
	}
	return 2*down >= len(nodes.Items), nil
}

// soonest is res, or a requeue after wait if that comes first.
func soonest(res ctrl.Result, wait time.Duration) ctrl.Result {
	if wait > 0 && (res.RequeueAfter == 0 || wait < res.RequeueAfter) {
		res.RequeueAfter = wait
	}
	return res
}
