// Package metricsauth decides who may read kuryr's metrics ([prometheus_exporter]
// auth). With "kubernetes" (the default) the metrics are served over HTTPS
// (a self-signed certificate made at start) to callers whose bearer token
// the API server authenticates (TokenReview) and authorizes for GET on
// the non-resource URL /metrics (SubjectAccessReview): the pattern of
// kube-rbac-proxy, through controller-runtime's filter, for the
// controller's metrics server and the daemon's alike. Bind the
// ClusterRole kuryr-metrics-reader to whatever scrapes them. With "none",
// plain HTTP to anyone who reaches the port.
package metricsauth

import (
	"crypto/tls"
	"fmt"
	"net/http"
	"os"

	"github.com/go-logr/logr"
	"k8s.io/client-go/rest"
	certutil "k8s.io/client-go/util/cert"
	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/kuryr-k8s/kuryr/pkg/config"
	"github.com/kuryr-k8s/kuryr/pkg/names"
)

// ServerOptions are the controller's metrics server's options for the
// configured port and auth.
func ServerOptions(cfg *config.Config) metricsserver.Options {
	o := metricsserver.Options{BindAddress: fmt.Sprintf(":%d", cfg.PrometheusExporter.ControllerExporterPort)}
	if cfg.PrometheusExporter.Auth == config.MetricsAuthKubernetes {
		// No CertDir with a certificate in it: a self-signed one.
		o.SecureServing, o.FilterProvider = true, filters.WithAuthenticationAndAuthorization
	}
	return o
}

// Protect wraps the daemon's metrics handler as ServerOptions does the
// controller's: it returns the handler to serve and the TLS configuration
// to serve it with (nil: plain HTTP).
func Protect(cfg *config.Config, restCfg *rest.Config, h http.Handler, logger logr.Logger) (http.Handler, *tls.Config, error) {
	if cfg.PrometheusExporter.Auth != config.MetricsAuthKubernetes {
		return h, nil, nil
	}
	client, err := rest.HTTPClientFor(restCfg)
	if err != nil {
		return nil, nil, fmt.Errorf("metrics authorization: %w", err)
	}
	filter, err := filters.WithAuthenticationAndAuthorization(restCfg, client)
	if err != nil {
		return nil, nil, fmt.Errorf("metrics authorization: %w", err)
	}
	protected, err := filter(logger, h)
	if err != nil {
		return nil, nil, fmt.Errorf("metrics authorization: %w", err)
	}
	tlsCfg, err := selfSigned()
	if err != nil {
		return nil, nil, err
	}
	return protected, tlsCfg, nil
}

// selfSigned is a TLS configuration with a certificate made now for this
// host: scrapers skip its verification (or pin it), as they do
// kube-rbac-proxy's.
func selfSigned() (*tls.Config, error) {
	host, err := os.Hostname()
	if err != nil {
		host = names.Daemon
	}
	certPEM, keyPEM, err := certutil.GenerateSelfSignedCertKey(host, nil, nil)
	if err != nil {
		return nil, fmt.Errorf("metrics certificate: %w", err)
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, fmt.Errorf("metrics certificate: %w", err)
	}
	return &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}, nil
}
