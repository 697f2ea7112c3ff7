package openstack

import (
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Every OpenStack request is counted and timed, by service and method, so
// that operators (and the benchmarks) can see how many calls a pod costs.
var (
	requests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "kuryr_openstack_requests_total",
		Help: "OpenStack API requests by service, resource (the collection asked about), method and status code.",
	}, []string{"service", "resource", "method", "code"})
	latency = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "kuryr_openstack_request_duration_seconds",
		Help:    "OpenStack API request latency by service and method.",
		Buckets: []float64{.01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
	}, []string{"service", "method"})
	available = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "kuryr_openstack_service_available",
		Help: "1 while an OpenStack service answers kuryr's requests, 0 from a request it left unanswered (or a gateway's 502/503/504) until it answers again.",
	}, []string{"service"})
)

// MustRegister adds the OpenStack client metrics to a registry.
func MustRegister(r prometheus.Registerer) {
	r.MustRegister(requests, latency, available, requestLatency, requestErrors)
}

type instrumented struct{ next http.RoundTripper }

func instrument(next http.RoundTripper) http.RoundTripper { return instrumented{next} }

func (t instrumented) RoundTrip(req *http.Request) (*http.Response, error) {
	svc := serviceOf(req.URL.Path)
	start := time.Now()
	resp, err := t.next.RoundTrip(req)
	took := time.Since(start).Seconds()
	latency.WithLabelValues(svc, req.Method).Observe(took)
	observeOperation(req, resp, err, took)
	code := "error"
	if err == nil {
		code = strconv.Itoa(resp.StatusCode)
	}
	requests.WithLabelValues(svc, resourceOf(req.URL.Path), req.Method, code).Inc()
	health.observe(svc, req, resp, err)
	return resp, err
}

func serviceOf(path string) string {
	switch {
	case strings.Contains(path, "/lbaas/") || strings.Contains(path, "/octavia/"):
		return ServiceLoadBalancer
	case strings.Contains(path, "/auth/") || strings.Contains(path, "/v3/") || strings.HasSuffix(path, "/v3"):
		return ServiceIdentity
	default:
		return ServiceNetwork
	}
}

// collection is what a resource label may be: a collection's name, never
// an id (ids have digits), so the label's values stay few.
var collectionName = regexp.MustCompile(`^[a-z][a-z_-]{0,39}$`)

// resourceOf names the collection a request is about, from the API's
// path: Neutron's first segment after v2.0 (ports, security-group-rules,
// ...; a port's tags count as ports), Octavia's after lbaas with a pool's
// members as members, Keystone's tokens; "other" for anything else.
func resourceOf(path string) string {
	segs := strings.Split(strings.Trim(path, "/"), "/")
	for i, s := range segs {
		if i+1 >= len(segs) {
			break
		}
		switch s {
		case "v2.0", "lbaas":
			if s == "v2.0" && segs[i+1] == "lbaas" { // gophercloud's Octavia paths: /v2.0/lbaas/...
				continue
			}
			name := strings.TrimSuffix(segs[i+1], ".json")
			if s == "lbaas" && slices.Contains(segs[i+1:], "members") {
				name = "members"
			}
			if collectionName.MatchString(name) {
				return name
			}
			return "other"
		case "auth":
			if segs[i+1] == "tokens" {
				return "tokens"
			}
		}
	}
	return "other"
}
