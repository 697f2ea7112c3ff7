//go:build e2e

package controller

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/kuryr-k8s/kuryr/pkg/neutron"
	"github.com/kuryr-k8s/kuryr/test/e2e/framework"
)

// TestPortPool: with vif_pool_driver = neutron, pods take pre-created ports
// and give them back; switching the pool off deletes the unused ones.
func TestPortPool(t *testing.T) {
	c := framework.Connect(t)
	k := c.ConnectKuryr(t)
	k.Controller(t, "restart", "--set", "kubernetes.vif_pool_driver=neutron",
		"--set", "vif_pool.ports_pool_min=3", "--set", "vif_pool.ports_pool_batch=3")
	t.Cleanup(func() { k.Controller(t, "restart") })
	pooled := func() int {
		n := 0
		for _, p := range c.ClusterPorts(t, k.Cluster) {
			if neutron.TagValue(p.Tags, "kuryr-pool=") != "" {
				n++
			}
		}
		return n
	}
	want := 3 * len(c.Nodes)
	// The controller's own count: Neutron lists a bulk request's ports
	// before the request returns, so counting there can run ahead.
	framework.Eventually(t, time.Minute, 300*time.Millisecond, "pools filled", func() (bool, error) {
		free, err := poolFree()
		for _, n := range c.Nodes {
			if free[n] < 3 {
				return false, fmt.Errorf("free ports %v (%v)", free, err)
			}
		}
		return true, nil
	})
	ns := framework.Name("e2e-pool")
	c.CreateNamespace(t, ns)
	pods := c.CreatePods(t, ns, "p", 2)
	kps := k.WaitKuryrPorts(t, pods, time.Minute)
	c.WaitRunning(t, pods, 2*time.Minute)
	byID := map[string]neutron.Port{}
	for _, p := range c.ClusterPorts(t, k.Cluster) {
		byID[p.ID] = p
	}
	for _, kp := range kps {
		v, _ := kp.Status.DefaultVIF()
		p := byID[v.PortID]
		if p.Name != "kuryr-pool-port" || p.HostID != kp.Spec.PodNodeName || !strings.Contains(strings.Join(p.Tags, ","), "kuryr-pool="+kp.Spec.PodNodeName) {
			t.Errorf("%s: port %s (%s on %s), want a pooled port of %s", kp.Name, p.ID, p.Name, p.HostID, kp.Spec.PodNodeName)
		}
	}
	c.DeleteNamespace(t, ns)
	if n := pooled(); n < want {
		t.Errorf("%d pooled ports after the pods went, want at least %d (released ports return)", n, want)
	}
	k.Controller(t, "restart") // pools off: the sweep deletes unused pooled ports
	c.WaitNoClusterPorts(t, k.Cluster, time.Minute)
}

// poolFree reads kuryr_port_pool_free_ports from the controller's metrics.
func poolFree() (map[string]float64, error) {
	resp, err := http.Get("http://127.0.0.1:9654/metrics")
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
