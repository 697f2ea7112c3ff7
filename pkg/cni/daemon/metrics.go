package daemon

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

var (
	requestSeconds = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "kuryr_cni_request_duration_seconds",
		Help:    "CNI requests served by the daemon, by command and result (ok, or the CNI error code).",
		Buckets: prometheus.ExponentialBuckets(0.005, 2, 16),
	}, []string{"command", "result"})
	addStageSeconds = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "kuryr_cni_add_stage_seconds",
		Help: "CNI ADD time by stage: wait_port (controller's port data), plug, wait_usable, and plug_and_usable (the two together).",
		// Factor 1.5 from 1 ms to 128 s: fine enough to tell 0.9 s from
		// 1.1 s, the plug + usable target.
		Buckets: prometheus.ExponentialBuckets(0.001, 1.5, 30),
	}, []string{"stage"})
)

// MustRegister adds the daemon's metrics to a registry.
func MustRegister(r prometheus.Registerer) { r.MustRegister(requestSeconds, addStageSeconds) }

func observeAdd(waitPort, plugTime, waitUsable time.Duration) {
	addStageSeconds.WithLabelValues("wait_port").Observe(waitPort.Seconds())
	addStageSeconds.WithLabelValues("plug").Observe(plugTime.Seconds())
	addStageSeconds.WithLabelValues("wait_usable").Observe(waitUsable.Seconds())
	addStageSeconds.WithLabelValues("plug_and_usable").Observe((plugTime + waitUsable).Seconds())
}
