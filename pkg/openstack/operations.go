package openstack

import (
	"context"
	"errors"
	"net/http"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
)

// The same requests as cloud-provider-openstack reports them, so that
// dashboards and alerts written for it apply to kuryr: a latency histogram
// and an error counter by request, "<resource>_<operation>"
// (port_create, security_group_rule_delete, loadbalancer_get,
// trunk_add_subports, ...).
var (
	requestLatency = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "openstack_api_request_duration_seconds",
		Help:    "OpenStack API request latency by request (<resource>_<operation>), as cloud-provider-openstack reports it.",
		Buckets: []float64{.01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
	}, []string{"request"})
	requestErrors = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "openstack_api_request_errors_total",
		Help: "OpenStack API requests that failed (no answer, or an HTTP status of 400 or more) by request (<resource>_<operation>).",
	}, []string{"request"})
)

// operationOf names a request "<resource>_<operation>" from its method and
// path: the collection in the singular (resourceOf, "-" as "_"), then
// create, list, get, update or delete, or the action a path names
// (trunk_add_subports, loadbalancer_status_get, port_tags_update); "other"
// when the collection is not known. Pure.
func operationOf(method, path string) string {
	collection := resourceOf(path)
	if collection == "other" {
		return "other"
	}
	name := singular(strings.ReplaceAll(collection, "-", "_"))
	segs := strings.Split(strings.Trim(path, "/"), "/")
	tail := []string{}
	for i := len(segs) - 1; i >= 0; i-- {
		if strings.TrimSuffix(segs[i], ".json") == collection {
			tail = segs[i+1:]
			break
		}
	}
	switch {
	case len(tail) == 0 && method == http.MethodGet:
		return name + "_list"
	case len(tail) == 0 && method == http.MethodPost:
		return name + "_create"
	case len(tail) >= 2:
		action := strings.ReplaceAll(strings.TrimSuffix(tail[1], ".json"), "-", "_")
		if !validAction(action) {
			return name + "_other"
		}
		if strings.HasPrefix(action, "add_") || strings.HasPrefix(action, "remove_") || strings.HasPrefix(action, "get_") {
			return name + "_" + action
		}
		return name + "_" + action + "_" + verb(method)
	}
	return name + "_" + verb(method)
}

func validAction(s string) bool { return collectionName.MatchString(s) }

// verb is the operation a method performs on one object.
func verb(method string) string {
	switch method {
	case http.MethodGet, http.MethodHead:
		return "get"
	case http.MethodPost:
		return "create"
	case http.MethodPut, http.MethodPatch:
		return "update"
	case http.MethodDelete:
		return "delete"
	}
	return "other"
}

// spelled are resource names cloud-provider-openstack spells otherwise.
var spelled = map[string]string{"floatingip": "floating_ip"}

// singular of a collection's name: policies → policy, ports → port,
// floatingips → floating_ip.
func singular(s string) string {
	if s, ok := spelled[strings.TrimSuffix(s, "s")]; ok {
		return s
	}
	if strings.HasSuffix(s, "ies") {
		return strings.TrimSuffix(s, "ies") + "y"
	}
	return strings.TrimSuffix(s, "s")
}

// observeOperation records one HTTP request in the cloud-provider-openstack
// style metrics. Not a request the caller gave up on before it was answered
// (cancelled: the service did nothing wrong), and a 401 is not an error of the call: gophercloud
// authenticates again and repeats it (a credential Keystone refuses shows
// as token_create errors).
func observeOperation(req *http.Request, resp *http.Response, err error, seconds float64) {
	if err != nil && errors.Is(req.Context().Err(), context.Canceled) {
		return
	}
	op := operationOf(req.Method, req.URL.Path)
	requestLatency.WithLabelValues(op).Observe(seconds)
	if err != nil || resp.StatusCode >= 400 && resp.StatusCode != http.StatusUnauthorized {
		requestErrors.WithLabelValues(op).Inc()
	}
}
