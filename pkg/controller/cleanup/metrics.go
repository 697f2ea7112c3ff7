package cleanup

import "github.com/prometheus/client_golang/prometheus"

// sweepSeconds times each sweep: its cost grows with what the cluster has
// in Neutron and Octavia (one list of each kind), so operators size
// cleanup_period against it.
var sweepSeconds = prometheus.NewHistogramVec(prometheus.HistogramOpts{
	Name:    "kuryr_cleanup_sweep_seconds",
	Help:    "Seconds each sweep of orphaned OpenStack resources took, by result (ok, failed).",
	Buckets: prometheus.ExponentialBuckets(0.1, 2, 12),
}, []string{"result"})

// MustRegister adds this package's metrics to a registry.
func MustRegister(r prometheus.Registerer) { r.MustRegister(sweepSeconds) }
