package main

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/kuryr-k8s/kuryr/test/e2e/framework"
)

// percentile of sorted durations (nearest rank).
func percentile(d []time.Duration, p float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), d...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	i := int(p/100*float64(len(s))+0.5) - 1
	return s[max(0, min(i, len(s)-1))]
}

func secs(d time.Duration) string { return fmt.Sprintf("%6.2fs", d.Seconds()) }

// scrape reads the active kuryr-controller's metrics (on its node's
// loopback: it runs on the host network of a local-cloud node).
func scrape(e *env) (map[string]*dto.MetricFamily, error) {
	return framework.ControllerMetrics(context.Background(), e.Kube)
}

func label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

// requestCounts sums kuryr_openstack_requests_total of one service
// ("network", "load-balancer") by read (GET) and write (anything else).
func requestCounts(mf map[string]*dto.MetricFamily, service string) (reads, writes float64) {
	for _, m := range mf["kuryr_openstack_requests_total"].GetMetric() {
		if label(m, "service") != service {
			continue
		}
		if label(m, "method") == "GET" {
			reads += m.GetCounter().GetValue()
		} else {
			writes += m.GetCounter().GetValue()
		}
	}
	return reads, writes
}

// readsByResource is, for one service, the GETs between two scrapes per
// unit (pod, Service) by resource, most first: "ports 0.30, subnets 0.10".
func readsByResource(before, after map[string]*dto.MetricFamily, service string, units int) string {
	count := func(mf map[string]*dto.MetricFamily) map[string]float64 {
		c := map[string]float64{}
		for _, m := range mf["kuryr_openstack_requests_total"].GetMetric() {
			if label(m, "service") == service && label(m, "method") == "GET" {
				c[label(m, "resource")] += m.GetCounter().GetValue()
			}
		}
		return c
	}
	b, a := count(before), count(after)
	type kv struct {
		name string
		n    float64
	}
	var list []kv
	for name, n := range a {
		if d := n - b[name]; d > 0 {
			list = append(list, kv{name, d / float64(units)})
		}
	}
	sort.Slice(list, func(i, j int) bool {
		return list[i].n > list[j].n || list[i].n == list[j].n && list[i].name < list[j].name
	})
	var out []string
	for _, e := range list {
		out = append(out, fmt.Sprintf("%s %.2f", e.name, e.n))
	}
	if len(out) == 0 {
		return "none"
	}
	return strings.Join(out, ", ")
}

// histogramDelta is the histogram of one label value observed between two
// scrapes: cumulative bucket counts by upper bound, and the sample count.
type histogramDelta struct {
	bounds []float64
	counts []float64
	total  float64
}

// histDelta is what a histogram (selected by its "stage" label) observed
// between two scrapes.
func histDelta(before, after map[string]*dto.MetricFamily, metric, stage string) histogramDelta {
	get := func(mf map[string]*dto.MetricFamily) *dto.Histogram {
		for _, m := range mf[metric].GetMetric() {
			if label(m, "stage") == stage {
				return m.GetHistogram()
			}
		}
		return nil
	}
	a, b := get(after), get(before)
	var h histogramDelta
	for i, bk := range a.GetBucket() {
		c := float64(bk.GetCumulativeCount())
		if b != nil && i < len(b.GetBucket()) {
			c -= float64(b.GetBucket()[i].GetCumulativeCount())
		}
		h.bounds, h.counts = append(h.bounds, bk.GetUpperBound()), append(h.counts, c)
	}
	h.total = float64(a.GetSampleCount()) - float64(b.GetSampleCount())
	return h
}

// quantile interpolates within buckets, as PromQL's histogram_quantile does.
func (h histogramDelta) quantile(q float64) time.Duration {
	if h.total == 0 {
		return 0
	}
	rank, lower, prev := q*h.total, 0.0, 0.0
	for i, c := range h.counts {
		if c >= rank {
			frac := (rank - prev) / max(c-prev, 1e-9)
			return time.Duration((lower + frac*(h.bounds[i]-lower)) * float64(time.Second))
		}
		lower, prev = h.bounds[i], c
	}
	return time.Duration(lower * float64(time.Second))
}

// add merges another delta with the same buckets (another node's).
func (h histogramDelta) add(o histogramDelta) histogramDelta {
	if len(h.bounds) == 0 {
		return o
	}
	out := histogramDelta{bounds: h.bounds, counts: append([]float64(nil), h.counts...), total: h.total + o.total}
	for i := range out.counts {
		if i < len(o.counts) {
			out.counts[i] += o.counts[i]
		}
	}
	return out
}
