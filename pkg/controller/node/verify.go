package node

import (
	"context"
	"errors"
	"sync"
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
// name still exist, with one (paged) listing of the cluster's node ports
// rather than a request per node (10 000 nodes would cost Neutron 67
// requests a second, with nothing changing), and enqueues every node: its
// reconcile refreshes its routes (the cluster's networks may have grown)
// and, for a port the listing does not show, reads it by id and replaces
// one deleted behind kuryr's back. Neutron is listed first and the nodes
// read after, so that a port annotated meanwhile is at worst read once
// more. When the listing fails the nodes are enqueued all the same, and
// read their ports by id.
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
					log.FromContext(ctx).Info("checking the nodes' ports failed: each node reads its own", "reason", err.Error())
				}
			}
		}()
		return nil
	})
}

// verify lists the node ports, then enqueues every node.
func (r *Reconciler) verify(ctx context.Context, q queue) error {
	var owners []string
	for _, k := range r.kinds() {
		if k.subnet != "" {
			owners = append(owners, k.deviceOwner)
		}
	}
	var listErr error
	if len(owners) > 0 {
		var ids map[string]bool
		ids, listErr = r.Neutron.ListPortIDsByOwner(ctx, []string{names.ClusterTag(r.Settings.Cluster)}, owners)
		r.listed.set(ids) // nil when it failed: each node reads its own
	}
	var nodes corev1.NodeList
	if err := r.List(ctx, &nodes); err != nil {
		return errors.Join(listErr, err)
	}
	for _, n := range nodes.Items {
		q.Add(reconcile.Request{NamespacedName: types.NamespacedName{Name: n.Name}})
	}
	return listErr
}

// listing is the last listing of the node ports, for the reconciles the
// verification enqueues: a port it shows is not read again by id.
type listing struct {
	mu  sync.Mutex
	ids map[string]bool
}

// set keeps ids (nil: no listing to go by).
func (l *listing) set(ids map[string]bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.ids = ids
}

// shows says whether the last listing holds id.
func (l *listing) shows(id string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.ids[id]
}
