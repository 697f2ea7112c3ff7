package kuryrport

import (
	"context"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	kuryrv1 "github.com/kuryr-k8s/kuryr/api/v1"
	"github.com/kuryr-k8s/kuryr/pkg/kpstatus"
	"github.com/kuryr-k8s/kuryr/pkg/neutron"
)

// activeLister is the one Neutron query the activity watcher makes.
type activeLister interface {
	ListPortIDs(ctx context.Context, tags []string, status string) (map[string]bool, error)
}

// ActivityWatcher marks KuryrPorts active when Neutron reports their ports
// ACTIVE, for backends other than OVN (with OVN the node daemons do it, at no
// cost to Neutron). Neutron has no event stream for clients, so it asks, but
// with one query for the whole cluster per interval and only while some port
// is still inactive: never a request per pod.
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
			if err := w.sweep(ctx); err != nil {
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
		if v, ok := kp.Status.VIFs["eth0"]; ok && !v.Active && kp.DeletionTimestamp.IsZero() {
			waiting = append(waiting, kp)
		}
	}
	if len(waiting) == 0 {
		return nil
	}
	active, err := w.Neutron.ListPortIDs(ctx, []string{neutron.ClusterTag(w.Cluster)}, "ACTIVE")
	if err != nil {
		return err
	}
	for _, kp := range waiting {
		if active[kp.Status.VIFs["eth0"].PortID] {
			if err := kpstatus.MarkActive(ctx, w.Client, kp.Namespace, kp.Name); err != nil {
				log.FromContext(ctx).Error(err, "marking port active", "kuryrport", kp.Namespace+"/"+kp.Name)
			}
		}
	}
	return nil
}
