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

// notReadyFor is how long the node has not been Ready: 0 when it is, or
// when it tells nothing yet (just registered). Pure.
func notReadyFor(node *corev1.Node, now time.Time) time.Duration {
	for _, c := range node.Status.Conditions {
		if c.Type != corev1.NodeReady {
			continue
		}
		if c.Status == corev1.ConditionTrue || c.LastTransitionTime.IsZero() {
			return 0
		}
		return max(now.Sub(c.LastTransitionTime.Time), time.Nanosecond)
	}
	return 0
}

// ready reports whether the node may keep a port of kind k: a kind needed
// only while the node is up (the refuse port) is removed once the node has
// been down DownAfter; before that, wait says when to look again.
func (r *Reconciler) ready(ctx context.Context, k kind, node *corev1.Node) (ok bool, wait time.Duration, err error) {
	d := notReadyFor(node, time.Now())
	if !k.whileUp || d == 0 {
		return true, 0, nil
	}
	if d < DownAfter {
		return true, DownAfter - d, nil
	}
	if _, annotated := node.Annotations[k.annotation]; annotated {
		log.FromContext(ctx).Info("node not Ready: its "+k.what+" removed", "node", node.Name, "notReadyFor", d.Round(time.Second).String())
		r.Recorder.Eventf(node, nil, corev1.EventTypeNormal, "NodeDown", "Remove"+strings.TrimPrefix(k.skip, "Skip"),
			"%s removed: the node has not been Ready for %s (the other nodes answer for it); it comes back when the node is Ready",
			k.what, d.Round(time.Second))
	}
	return false, 0, r.disable(ctx, k, node)
}

// soonest is res, or a requeue after wait if that comes first.
func soonest(res ctrl.Result, wait time.Duration) ctrl.Result {
	if wait > 0 && (res.RequeueAfter == 0 || wait < res.RequeueAfter) {
		res.RequeueAfter = wait
	}
	return res
}
