package daemon

import (
	"context"
	"fmt"
	"net/http"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"k8s.io/client-go/rest"

	"github.com/kuryr-k8s/kuryr/pkg/cni/api"
	"github.com/kuryr-k8s/kuryr/pkg/cni/conntrack"
	"github.com/kuryr-k8s/kuryr/pkg/cni/nodeport"
	"github.com/kuryr-k8s/kuryr/pkg/cni/refuse"
	"github.com/kuryr-k8s/kuryr/pkg/cni/svcports"
	"github.com/kuryr-k8s/kuryr/pkg/config"
	"github.com/kuryr-k8s/kuryr/pkg/health"
	"github.com/kuryr-k8s/kuryr/pkg/metricsauth"
	"github.com/kuryr-k8s/kuryr/pkg/version"
)

// serveHealth serves /livez, /readyz and the read-only /attachments from
// the start.
func serveHealth(ctx context.Context, cfg *config.Config, ready *Readiness, attachments http.Handler) error {
	hs := health.New()
	hs.AddReadyz("cni", ready.Ready)
	hmux := http.NewServeMux()
	hmux.Handle("/", hs.Handler())
	hmux.Handle("GET "+api.AttachmentsPath, attachments)
	return health.Start(ctx, fmt.Sprintf(":%d", cfg.CNIHealthServer.Port), hmux, nil)
}

// serveMetrics serves the metrics, to the callers [prometheus_exporter]
// auth admits (package metricsauth).
func serveMetrics(ctx context.Context, cfg *config.Config, restCfg *rest.Config, logger logr.Logger) error {
	reg := prometheus.NewRegistry()
	// What every Go service exports (controller-runtime's registry has
	// them for the controller), and which build this is.
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	version.MustRegister(reg)
	MustRegister(reg)
	nodeport.MustRegister(reg)
	refuse.MustRegister(reg)
	conntrack.MustRegister(reg)
	svcports.MustRegister(reg)
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	h, tlsCfg, err := metricsauth.Protect(cfg, restCfg, mux, logger)
	if err != nil {
		return err
	}
	return health.Start(ctx, fmt.Sprintf(":%d", cfg.PrometheusExporter.CNIExporterPort), h, tlsCfg)
}
