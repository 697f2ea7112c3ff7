// Package quota exports, on the leader, the Neutron quota headroom of the
// project kuryr creates in, read every minute (one request: Neutron's
// quota details; and once, the credential's project), so that an alert fires before pods go without ports:
// kuryr_quota_free_count{resource} (the original's name) and
// kuryr_quota_limit{resource}, for the resources kuryr creates that have
// a limit.
package quota

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/kuryr-k8s/kuryr/pkg/neutron"
)

var (
	free = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "kuryr_quota_free_count",
		Help: "What the project kuryr creates in may still create of a Neutron resource: its limit less used and reserved (resources without a limit are not exported).",
	}, []string{"resource"})
	limit = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "kuryr_quota_limit",
		Help: "The Neutron quota limit of a resource kuryr creates, in the project it creates in.",
	}, []string{"resource"})
)

// MustRegister adds the quota metrics to a registry.
func MustRegister(r prometheus.Registerer) { r.MustRegister(free, limit) }

// Interval is how often the quotas are read.
const Interval = time.Minute

// reader reads a project's quota details (neutron.Client).
type reader interface {
	Quotas(ctx context.Context, project string) (map[string]neutron.QuotaUsage, string, error)
}

// Watcher reads the quotas every Interval while it runs (on the leader).
type Watcher struct {
	Neutron reader
	// Project kuryr creates in ([neutron_defaults] project); empty: the
	// credential's own, looked up at the first reading.
	Project string
}

// Start implements manager.Runnable.
func (w *Watcher) Start(ctx context.Context) error {
	logger := log.FromContext(ctx).WithName("quota")
	failing := false
	project := w.Project // the credential's, once looked up
	t := time.NewTicker(Interval)
	defer t.Stop()
	for {
		var err error
		project, err = read(ctx, w.Neutron, project)
		switch {
		case err != nil && !failing && ctx.Err() == nil:
			logger.Info("cannot read the Neutron quotas: kuryr_quota_free_count is not exported until it can",
				"reason", err.Error())
			failing = true
		case err == nil && failing:
			logger.Info("Neutron quotas read again")
			failing = false
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// read updates the gauges from one reading of project's quotas (empty:
// the credential's), and returns the project read; a failed reading
// removes them (a stale headroom would hide an exhausted quota).
func read(ctx context.Context, nc reader, project string) (string, error) {
	q, read, err := nc.Quotas(ctx, project)
	if read != "" {
		project = read // one request a minute from now on
	}
	if err != nil {
		free.Reset()
		limit.Reset()
		return project, err
	}
	set(q)
	return project, nil
}

// set exports the limited resources kuryr creates; a limit of 0 (a cloud
// that allows none, e.g. no floating IPs) is a limit, not an exhausted
// quota: its free count is not exported, so that "free == 0" alerts only
// for a used-up one.
func set(q map[string]neutron.QuotaUsage) {
	for _, res := range neutron.KuryrResources {
		u, ok := q[res]
		if !ok || u.Limit < 0 {
			free.DeleteLabelValues(res)
			limit.DeleteLabelValues(res)
			continue
		}
		limit.WithLabelValues(res).Set(float64(u.Limit))
		if u.Limit == 0 {
			free.DeleteLabelValues(res)
			continue
		}
		free.WithLabelValues(res).Set(float64(u.Free()))
	}
}
