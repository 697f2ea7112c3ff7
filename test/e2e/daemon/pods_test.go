//go:build e2e

// Package daemon tests kuryr-daemon and kuryr-cni on the local cloud: pods
// created through Kubernetes are plugged into their Neutron ports by the
// real kubelet and containerd, talk across nodes with their real IPs, and
// leave nothing behind.
package daemon

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kuryr-k8s/kuryr/test/e2e/framework"
)

func TestPodsAcrossNodesTalk(t *testing.T) {
	c, k, ns := framework.Setup(t, "e2e-talk")
	created := c.CreatePods(t, ns, "p", 2) // one per node
	kps := k.WaitKuryrPorts(t, created, time.Minute)
	start := time.Now()
	pods := c.WaitRunning(t, created, 2*time.Minute)
	t.Logf("both pods Running %s after their ports were ready", time.Since(start).Round(time.Millisecond))
	for _, p := range pods {
		vif, _ := kps[p.Namespace+"/"+p.Name].Status.DefaultVIF()
		if !strings.HasPrefix(vif.IPs[0].Address, p.Status.PodIP+"/") {
			t.Errorf("%s: pod IP %s, port %s", p.Name, p.Status.PodIP, vif.IPs[0].Address)
		}
	}
	// The node's daemon records that the port carries traffic, and Neutron
	// agrees: the port is ACTIVE.
	active := k.WaitKuryrPortsActive(t, pods, 30*time.Second)
	for _, p := range c.ClusterPorts(t, k.Cluster) {
		if active[p.ID] && p.Status != "ACTIVE" {
			t.Errorf("port %s of a running pod is %s in Neutron", p.ID, p.Status)
		}
	}
	a, b := pods[0], pods[1]
	if a.Spec.NodeName == b.Spec.NodeName {
		t.Fatalf("both pods on %s", a.Spec.NodeName)
	}
	for _, pair := range [][2]*corev1.Pod{{a, b}, {b, a}} {
		from, to := pair[0], pair[1]
		if out, err := framework.Exec(t, from, "ping", "-c", "3", "-W", "2", to.Status.PodIP); err != nil {
			t.Errorf("ping %s -> %s: %v: %s", from.Name, to.Name, err, out)
		}
		out, err := framework.Exec(t, from, "sh", "-c", fmt.Sprintf(`printf 'GET / HTTP/1.0\r\n\r\n' | nc %s 8080`, to.Status.PodIP))
		if err != nil || !strings.Contains(out, to.Name) {
			t.Errorf("HTTP %s -> %s: %v: %q", from.Name, to.Name, err, out)
		}
		if logs := c.Logs(t, to); !strings.Contains(logs, from.Status.PodIP+"]:") {
			t.Errorf("%s did not see %s's real IP %s; its log:\n%s", to.Name, from.Name, from.Status.PodIP, logs)
		}
	}
	c.DeleteNamespace(t, ns)
	assertNothingLeft(t, c, k.Cluster)
}

func assertNothingLeft(t *testing.T, c *framework.Cloud, cluster string) {
	t.Helper()
	c.WaitNoClusterPorts(t, cluster, time.Minute)
	for _, n := range c.Nodes {
		if left := c.NodeLeftovers(t, n); len(left) > 0 {
			t.Errorf("%s: left behind %v", n, left)
		}
	}
}

// TestCreateDeleteLoop creates and deletes 20 pods twice: the second round
// starts where the first left nothing behind.
func TestCreateDeleteLoop(t *testing.T) {
	c, k, ns := framework.Setup(t, "e2e-loop")
	ctx := context.Background()
	for round := 1; round <= 2; round++ {
		start := time.Now()
		pods := c.CreatePods(t, ns, fmt.Sprintf("r%d", round), 20)
		c.WaitRunning(t, pods, 3*time.Minute)
		running := time.Since(start)
		var zero int64
		if err := c.Kube.CoreV1().Pods(ns).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: &zero}, metav1.ListOptions{}); err != nil {
			t.Fatal(err)
		}
		framework.Eventually(t, 2*time.Minute, 500*time.Millisecond, "pods gone", func() (bool, error) {
			l, err := c.Kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
			return err == nil && len(l.Items) == 0, fmt.Errorf("%d pods left (%v)", len(l.Items), err)
		})
		assertNothingLeft(t, c, k.Cluster)
		t.Logf("round %d: 20 pods Running after %s, all gone and cleaned after %s", round,
			running.Round(time.Millisecond), time.Since(start).Round(time.Millisecond))
	}
}
