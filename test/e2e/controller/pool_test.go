//go:build e2e

package controller

import (
	"fmt"
	"strings"
	"testing"
	"time"

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
	framework.Eventually(t, time.Minute, 300*time.Millisecond, "pools filled", func() (bool, error) {
		n := pooled()
		return n >= want, fmt.Errorf("%d pooled ports", n)
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
