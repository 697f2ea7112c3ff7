package kuryrport

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/types"
)

// stageSeconds times each KuryrPort from when a worker first reconciles it
// (so without time queued behind other KuryrPorts) to its Neutron port
// existing and to its status being written: the Neutron-bound part of a
// pod's start, which operators tune port_workers against.
var stageSeconds = prometheus.NewHistogramVec(prometheus.HistogramOpts{
	Name:    "kuryr_kuryrport_stage_seconds",
	Help:    "Seconds from a KuryrPort first being reconciled to a stage: port_created, status_written.",
	Buckets: prometheus.ExponentialBuckets(0.05, 1.5, 20),
}, []string{"stage"})

// poolFree is how many ready ports each node's pool holds.
var poolFree = prometheus.NewGaugeVec(prometheus.GaugeOpts{
	Name: "kuryr_port_pool_free_ports",
	Help: "Ready ports in each node's pool (vif_pool_driver = neutron).",
}, []string{"node"})

// startupSeconds is how long a controller took to be ready to lead: from
// its process's start (package initialisation) to start-up completing
// (caches synced, leadership won, the cluster's ports read from Neutron).
var startupSeconds = prometheus.NewGauge(prometheus.GaugeOpts{
	Name: "kuryr_controller_startup_seconds",
	Help: "Seconds from the process's start to its start-up as leader completing (0 until then).",
})

// processStart stands for the process's start: package variables are set
// before main runs.
var processStart = time.Now()

// MustRegister adds this package's metrics to a registry.
func MustRegister(r prometheus.Registerer) { r.MustRegister(stageSeconds, poolFree, startupSeconds) }

// stopwatch remembers when each KuryrPort was first seen.
type stopwatch struct{ seen sync.Map }

func (s *stopwatch) start(uid types.UID) { s.seen.LoadOrStore(uid, time.Now()) }

func (s *stopwatch) lap(uid types.UID, stage string) {
	if t, ok := s.seen.Load(uid); ok {
		stageSeconds.WithLabelValues(stage).Observe(time.Since(t.(time.Time)).Seconds())
	}
}

func (s *stopwatch) stop(uid types.UID) { s.seen.Delete(uid) }
