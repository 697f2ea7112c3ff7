package kuryrport

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	kuryrv1 "github.com/kuryr-k8s/kuryr/api/v1"
	"github.com/kuryr-k8s/kuryr/pkg/retry"
)

// activeLister is the one Neutron query the activity watcher makes.
type activeLister interface {
	ActivePorts(ctx context.Context, ids []string) (map[string]bool, error)
}

// ActivityWatcher marks KuryrPorts active when Neutron reports their ports
// ACTIVE: after the reconciler's first write of a KuryrPort's status (its
// port's state then), it is the only writer of that field (the node
// daemons write nothing to KuryrPorts). Neutron has no event stream for
// clients, so it asks, and only while some port is still inactive, and
// only about those ports (a query per 50 of them, whose cost follows the
// ports asked about rather than the cluster's size). It asks again
// Interval after a round, or Spacing times as long as Neutron took to
// answer when that was slow (at most 10 Intervals), so that polling never
// takes more than a share of Neutron while a burst of pods keeps it busy
// creating their ports.
type ActivityWatcher struct {
	Client   client.Client
	Neutron  activeLister
	Interval time.Duration
	Spacing  int // 0: 4

	// A port inactive for longer than stuckAfter (a node that never
	// plugs it, a binding that failed) is asked about every stuckEvery
	// only: ports that never become ACTIVE cost a query now and then, not
	// one every Interval for ever. Only the watcher's goroutine uses these.
	since   map[string]time.Time // port id -> first seen inactive
	stuckAt time.Time            // when the stuck ports were last asked about
	timeNow func() time.Time     // time.Now unless a test sets it
}

const (
	stuckAfter = time.Minute
	stuckEvery = 30 * time.Second
)

// askable drops from waiting the ports waiting longer than stuckAfter,
// unless they are due (every stuckEvery), and forgets ports no longer
// waiting.
func (w *ActivityWatcher) askable(waiting map[string]types.NamespacedName) {
	now := time.Now()
	if w.timeNow != nil {
		now = w.timeNow()
	}
	if w.since == nil {
		w.since = map[string]time.Time{}
	}
	for id := range w.since {
		if _, ok := waiting[id]; !ok {
			delete(w.since, id)
		}
	}
	due := now.Sub(w.stuckAt) >= stuckEvery
	stuck := false
	for id := range waiting {
		first, ok := w.since[id]
		if !ok {
			w.since[id] = now
			continue
		}
		if now.Sub(first) > stuckAfter {
			stuck = true
			if !due {
				delete(waiting, id)
			}
		}
	}
	if stuck && due {
		w.stuckAt = now
	}
}

// Start runs until ctx ends (a manager Runnable).
func (w *ActivityWatcher) Start(ctx context.Context) error {
	t := time.NewTimer(w.Interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			asked, err := w.sweep(ctx)
			if err != nil && !retry.Stopping(ctx, err) {
				log.FromContext(ctx).Error(err, "checking which ports became ACTIVE")
			}
			t.Reset(w.next(asked, err))
		}
	}
}

// next is the wait before the next round after one whose Neutron queries
// took asked (a failed round: Interval, as if Neutron answered at once).
func (w *ActivityWatcher) next(asked time.Duration, err error) time.Duration {
	spacing := w.Spacing
	if spacing <= 0 {
		spacing = 4
	}
	if err != nil {
		return w.Interval
	}
	return min(max(w.Interval, time.Duration(spacing)*asked), 10*w.Interval)
}

// sweep marks what became ACTIVE, and says how long Neutron took to say.
func (w *ActivityWatcher) sweep(ctx context.Context) (time.Duration, error) {
	var kps kuryrv1.KuryrPortList
	// Read-only use of the cache's objects: no copy of every KuryrPort
	// each round.
	if err := w.Client.List(ctx, &kps, client.UnsafeDisableDeepCopy); err != nil {
		return 0, err
	}
	waiting := map[string]types.NamespacedName{} // port id -> its KuryrPort
	for _, kp := range kps.Items {
		if v, ok := kp.Status.VIFs[kuryrv1.DefaultInterface]; ok && !v.Active && v.PortID != "" && kp.DeletionTimestamp.IsZero() &&
			(v.Nested == nil || v.Nested.Mode != kuryrv1.NestedMacvlan) { // never bound, never ACTIVE
			waiting[v.PortID] = types.NamespacedName{Namespace: kp.Namespace, Name: kp.Name}
		}
	}
	w.askable(waiting)
	if len(waiting) == 0 {
		return 0, nil
	}
	start := time.Now()
	active, err := w.Neutron.ActivePorts(ctx, slices.Sorted(maps.Keys(waiting)))
	asked := time.Since(start)
	// What was learnt before a query failed is marked all the same.
	for id := range active {
		kp, ok := waiting[id]
		if !ok {
			continue // not asked about: never trust the answer beyond the question
		}
		if err := markActive(ctx, w.Client, kp.Namespace, kp.Name); err != nil {
			log.FromContext(ctx).Error(err, "marking port active", "kuryrport", kp.String())
		}
	}
	return asked, err
}

// markActive sets only status.vifs.eth0.active (a merge patch), so that it
// never races with the reconciler writing the other fields.
func markActive(ctx context.Context, c client.Client, ns, name string) error {
	kp := &kuryrv1.KuryrPort{}
	kp.Namespace, kp.Name = ns, name
	patch := fmt.Sprintf(`{"status":{"vifs":{%q:{"active":true}}}}`, kuryrv1.DefaultInterface)
	return client.IgnoreNotFound(c.Status().Patch(ctx, kp, client.RawPatch(types.MergePatchType, []byte(patch))))
}
