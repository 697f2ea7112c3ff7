package kuryrport

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	kuryrv1 "github.com/kuryr-k8s/kuryr/api/v1"
	"github.com/kuryr-k8s/kuryr/pkg/names"
	"github.com/kuryr-k8s/kuryr/pkg/retry"
)

// activeLister is the one Neutron query the activity watcher makes.
type activeLister interface {
	ListPortIDs(ctx context.Context, tags []string, status string) (map[string]bool, error)
}

// ActivityWatcher marks KuryrPorts active when Neutron reports their ports
// ACTIVE: it is the only writer of that field (the node daemons write
// nothing to KuryrPorts). Neutron has no event stream for clients, so it
// asks, but with one query for the whole cluster per interval and only while
// some port is still inactive: never a request per pod.
type ActivityWatcher struct {
	Client   client.Client
	Neutron  activeLister
	Cluster  string
	Interval time.Duration
}

// Start runs until ctx ends (a manager Runnable).
func (w *ActivityWatcher) Start(ctx context.Context) error {
	t := time.NewTicker(w.Interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			if err := w.sweep(ctx); err != nil && !retry.Stopping(ctx, err) {
				log.FromContext(ctx).Error(err, "checking which ports became ACTIVE")
			}
		}
	}
}

func (w *ActivityWatcher) sweep(ctx context.Context) error {
	var kps kuryrv1.KuryrPortList
	if err := w.Client.List(ctx, &kps); err != nil {
		return err
	}
	var waiting []kuryrv1.KuryrPort
	for _, kp := range kps.Items {
		if v, ok := kp.Status.VIFs[kuryrv1.DefaultInterface]; ok && !v.Active && kp.DeletionTimestamp.IsZero() &&
			(v.Nested == nil || v.Nested.Mode != kuryrv1.NestedMacvlan) { // never bound, never ACTIVE
			waiting = append(waiting, kp)
		}
	}
	if len(waiting) == 0 {
		return nil
	}
	active, err := w.Neutron.ListPortIDs(ctx, []string{names.ClusterTag(w.Cluster)}, "ACTIVE")
	if err != nil {
		return err
	}
	for _, kp := range waiting {
		if active[kp.Status.VIFs[kuryrv1.DefaultInterface].PortID] {
			if err := markActive(ctx, w.Client, kp.Namespace, kp.Name); err != nil {
				log.FromContext(ctx).Error(err, "marking port active", "kuryrport", kp.Namespace+"/"+kp.Name)
			}
		}
	}
	return nil
}

// markActive sets only status.vifs.eth0.active (a merge patch), so that it
// never races with the reconciler writing the other fields.
func markActive(ctx context.Context, c client.Client, ns, name string) error {
	kp := &kuryrv1.KuryrPort{}
	kp.Namespace, kp.Name = ns, name
	patch := fmt.Sprintf(`{"status":{"vifs":{%q:{"active":true}}}}`, kuryrv1.DefaultInterface)
	return client.IgnoreNotFound(c.Status().Patch(ctx, kp, client.RawPatch(types.MergePatchType, []byte(patch))))
}
