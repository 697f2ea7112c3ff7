//go:build e2e

package framework

import (
	"context"

	dto "github.com/prometheus/client_model/go"
)

// controllerMetrics reads the active kuryr-controller's metrics, on its
// node's loopback.
func (c *Cloud) controllerMetrics() (map[string]*dto.MetricFamily, error) {
	return ControllerMetrics(context.Background(), c.Kube)
}

// PoolFree reads kuryr_port_pool_free_ports, by node, from the active
// controller's metrics.
func (c *Cloud) PoolFree() (map[string]float64, error) {
	mf, err := c.controllerMetrics()
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
// active controller has made since it started.
func (c *Cloud) OpenStackWrites(service string) (float64, error) {
	mf, err := c.controllerMetrics()
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
