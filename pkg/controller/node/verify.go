package node

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/kuryr-k8s/kuryr/pkg/names"
)

// verifyPeriod is how often the nodes' annotated ports are checked in
// Neutron.
const verifyPeriod = 5 * time.Minute

type queue = workqueue.TypedRateLimitingInterface[reconcile.Request]

// verifySource checks, every period, that the ports the nodes' annotations
// name still exist, with one listing of the cluster's node ports rather
// than a request per node (10 000 nodes would cost Neutron 67 requests a
// second, with nothing changing), and enqueues the nodes whose port is not
// listed: their reconcile reads the port by id and replaces one deleted
// behind kuryr's back. Neutron is listed first and the nodes read after,
// so that a port annotated meanwhile is at worst read once more.
func (r *Reconciler) verifySource(period time.Duration) source.Source {
	return source.Func(func(ctx context.Context, q queue) error {
		go func() {
			t := time.NewTicker(period)
			defer t.Stop()
			for {
				select {
				case <-ctx.Done():
					return
				case <-t.C:
				}
				if err := r.verify(ctx, q); err != nil {
					log.FromContext(ctx).Info("checking the nodes' ports failed: trying again next period", "reason", err.Error(), "period", period.String())
				}
			}
		}()
		return nil
	})
}

func (r *Reconciler) verify(ctx context.Context, q queue) error {
	var owners []string
	for _, k := range r.kinds() {
		if k.subnet != "" {
			owners = append(owners, k.deviceOwner)
		}
	}
	if len(owners) == 0 {
		return nil
	}
	ids, err := r.Neutron.ListPortIDsByOwner(ctx, []string{names.ClusterTag(r.Settings.Cluster)}, owners)
	if err != nil {
		return err
	}
	var nodes corev1.NodeList
	if err := r.List(ctx, &nodes); err != nil {
		return err
	}
	for _, name := range unlisted(nodes.Items, r.kinds(), ids) {
		q.Add(reconcile.Request{NamespacedName: types.NamespacedName{Name: name}})
	}
	return nil
}

// unlisted are the nodes an annotation of which names a port not in ids.
// Pure.
func unlisted(nodes []corev1.Node, kinds []kind, ids map[string]bool) []string {
	var out []string
	for _, n := range nodes {
		for _, k := range kinds {
			if np, ok := recorded(n.Annotations, k.annotation); ok && !ids[np.PortID] {
				out = append(out, n.Name)
				break
			}
		}
	}
	return out
}
