//go:build e2e

package framework

import (
	"net/http"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// ControllerMetricsURL is where the local cloud's kuryr-controller serves
// its metrics.
const ControllerMetricsURL = "http://127.0.0.1:9654/metrics"

// PoolFree reads kuryr_port_pool_free_ports, by node, from the
// controller's metrics.
func PoolFree() (map[string]float64, error) {
	resp, err := http.Get(ControllerMetricsURL)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	p := expfmt.NewTextParser(model.UTF8Validation)
	mf, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		return nil, err
	}
	out := map[string]float64{}
	for _, m := range mf["kuryr_port_pool_free_ports"].GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() == "node" {
				out[l.GetValue()] = m.GetGauge().GetValue()
			}
		}
	}
	return out, nil
}

// OpenStackWrites sums kuryr_openstack_requests_total of one service
// ("network", "load-balancer") over every method but GET: the writes the
// running controller has made since it started.
func OpenStackWrites(service string) (float64, error) {
	resp, err := http.Get(ControllerMetricsURL)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	p := expfmt.NewTextParser(model.UTF8Validation)
	mf, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		return 0, err
	}
	var sum float64
	for _, m := range mf["kuryr_openstack_requests_total"].GetMetric() {
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		if labels["service"] == service && labels["method"] != "GET" {
			sum += m.GetCounter().GetValue()
		}
	}
	return sum, nil
}
