//go:build e2e

package controller

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kuryr-k8s/kuryr/pkg/names"
	"github.com/kuryr-k8s/kuryr/pkg/neutron"
	"github.com/kuryr-k8s/kuryr/test/e2e/framework"
)

// TestPortPool: with vif_pool_driver = neutron, pods take pre-created ports
// and give them back; a removed node's pool is deleted; switching the pool
// off deletes the unused ones.
func TestPortPool(t *testing.T) {
	c := framework.Connect(t)
	k := c.ConnectKuryr(t)
	// A Node with no kubelet behind it, removed once it has a pool.
	ghost := framework.Name("ghost")
	ctx := context.Background()
	if _, err := c.Kube.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: ghost}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Kube.CoreV1().Nodes().Delete(ctx, ghost, metav1.DeleteOptions{}) })
	// A short timeout makes the sweep's second run come 15 s after start.
	k.Controller(t, "restart", "--set", "kubernetes.vif_pool_driver=neutron",
		"--set", "vif_pool.ports_pool_min=3", "--set", "vif_pool.ports_pool_batch=3",
		"--set", "controller.cleanup_period=2", "--set", "neutron.timeout=5")
	t.Cleanup(func() { k.Controller(t, "restart") })
	pooledOn := func(node string) int {
		n := 0
		for _, p := range c.ClusterPorts(t, k.Cluster) {
			if v := names.PoolNodeOf(p.Tags); v != "" && (node == "" || v == node) {
				n++
			}
		}
		return n
	}
	pooled := func() int { return pooledOn("") }
	framework.Eventually(t, time.Minute, 300*time.Millisecond, "a pool for the ghost node", func() (bool, error) {
		n := pooledOn(ghost)
		return n >= 3, fmt.Errorf("%d pooled ports on %s", n, ghost)
	})
	if err := c.Kube.CoreV1().Nodes().Delete(ctx, ghost, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	removed := time.Now()
	framework.Eventually(t, time.Minute, 300*time.Millisecond, "the removed node's pool deleted", func() (bool, error) {
		n := pooledOn(ghost)
		return n == 0, fmt.Errorf("%d pooled ports on %s", n, ghost)
	})
	t.Logf("the removed node's pool was deleted %s after the node", time.Since(removed).Round(time.Millisecond))
	// Its management port (Neutron could not bind it: no chassis) went too.
	framework.Eventually(t, time.Minute, 300*time.Millisecond, "the removed node's management port deleted", func() (bool, error) {
		n := len(c.NodePorts(t, k.Cluster)[ghost])
		return n == 0, fmt.Errorf("%d management ports of %s", n, ghost)
	})
	want := 3 * len(c.Nodes)
	// The controller's own count: Neutron lists a bulk request's ports
	// before the request returns, so counting there can run ahead.
	framework.Eventually(t, time.Minute, 300*time.Millisecond, "pools filled", func() (bool, error) {
		free, err := c.PoolFree()
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
		if p.Name != "kuryr-pool-port" || p.HostID != kp.Spec.PodNodeName || names.PoolNodeOf(p.Tags) != kp.Spec.PodNodeName {
			t.Errorf("%s: port %s (%s on %s), want a pooled port of %s", kp.Name, p.ID, p.Name, p.HostID, kp.Spec.PodNodeName)
		}
	}
	// A pooled port is never replaced (as "never bound" or otherwise): kuryr
	// gives the pods no Warning.
	evs, err := c.Kube.EventsV1().Events(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range evs.Items {
		if e.Type == corev1.EventTypeWarning && e.ReportingController == "kuryr-controller" {
			t.Errorf("Warning on %s/%s: %s %s: %s", e.Regarding.Kind, e.Regarding.Name, e.Reason, e.Action, e.Note)
		}
	}
	c.DeleteNamespace(t, ns)
	if n := pooled(); n < want {
		t.Errorf("%d pooled ports after the pods went, want at least %d (released ports return)", n, want)
	}
	// Pools off: the sweep deletes unused pooled ports, once they are older
	// than its young-object guard.
	k.Controller(t, "restart", "--set", "controller.cleanup_period=2")
	c.WaitNoClusterPorts(t, k.Cluster, time.Minute)
}
