package metricsauth

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/go-logr/logr"
	"k8s.io/client-go/rest"

	"github.com/kuryr-k8s/kuryr/pkg/config"
)

func TestProtect(t *testing.T) {
	ok := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("metrics")) })
	restCfg := &rest.Config{Host: "https://127.0.0.1:1"} // never asked: no token to review
	for _, c := range []struct {
		auth     string
		tls      bool
		anonCode int
	}{
		{config.MetricsAuthNone, false, http.StatusOK},
		{config.MetricsAuthKubernetes, true, http.StatusUnauthorized},
	} {
		cfg := &config.Config{PrometheusExporter: config.PrometheusExporter{Auth: c.auth}}
		h, tlsCfg, err := Protect(cfg, restCfg, ok, logr.Discard())
		if err != nil {
			t.Fatalf("%s: %v", c.auth, err)
		}
		if (tlsCfg != nil) != c.tls || c.tls && len(tlsCfg.Certificates) != 1 {
			t.Errorf("%s: TLS %v, want %v", c.auth, tlsCfg != nil, c.tls)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
		if rec.Code != c.anonCode {
			t.Errorf("%s: a request without a token got %d, want %d", c.auth, rec.Code, c.anonCode)
		}
	}
	if o := ServerOptions(&config.Config{PrometheusExporter: config.PrometheusExporter{Auth: config.MetricsAuthKubernetes}}); !o.SecureServing || o.FilterProvider == nil {
		t.Errorf("controller with auth kubernetes: SecureServing %v, filter %v", o.SecureServing, o.FilterProvider != nil)
	}
}
