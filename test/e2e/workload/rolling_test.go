//go:build e2e

// Package workload tests kuryr as the Kubernetes workload it is installed
// as (deploy/): rolling updates of its DaemonSet and Deployment.
package workload

import (
	"context"
	"fmt"
	"net"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kuryr-k8s/kuryr/pkg/controller/kuryrport"
	"github.com/kuryr-k8s/kuryr/pkg/names"
	"github.com/kuryr-k8s/kuryr/test/e2e/framework"
)

// maxGap is the longest a running pod may lose its network during the
// rollouts.
const maxGap = time.Second

// TestRollingRestart rolls kuryr-daemon (every node) and kuryr-controller
// (both replicas, the leader handing over) while two pods on different
// nodes talk to each other every 100 ms and new pods are created all along:
// no path is down longer than 1 s, every pod created meanwhile starts
// without a failed sandbox, and Neutron holds exactly one port per pod and
// the same node ports as before.
func TestRollingRestart(t *testing.T) {
	c, k, ns := framework.Setup(t, "e2e-rolling")
	if len(c.PodNodes) < 2 {
		t.Fatal("needs two nodes")
	}
	pair := c.WaitReady(t, c.CreatePodsOn(t, ns, "talk", 2, c.PodNodes), 2*time.Minute)
	nodePortsBefore := nodePortIDs(t, c, k)
	probers := []*prober{newPathProber(t, pair[0], pair[1]), newPathProber(t, pair[1], pair[0])}
	for _, p := range probers {
		go p.run()
	}

	stop := make(chan struct{})
	created := make(chan []*corev1.Pod, 1)
	go func() { created <- createWhile(t, c, ns, stop) }()

	start := time.Now()
	k.RestartDaemons(t)
	t.Logf("kuryr-daemon rolled out on every node in %s (from %s)", time.Since(start).Round(time.Millisecond),
		start.Format("15:04:05.000"))
	mid := time.Now()
	k.Controller(t, "restart")
	t.Logf("kuryr-controller rolled out (2 replicas, leader handed over) in %s (from %s)", time.Since(mid).Round(time.Millisecond),
		mid.Format("15:04:05.000"))
	time.Sleep(5 * time.Second) // pods created right after the rollouts too
	close(stop)
	pods := <-created

	for _, p := range probers {
		gap, at, ok, fail := p.finish()
		t.Logf("%s: %d answered, %d not; longest gap %s (from %s)", p.name, ok, fail, gap.Round(time.Millisecond), at.Format("15:04:05.000"))
		if gap > maxGap {
			t.Errorf("%s: no answer for %s during the rollouts, want at most %s", p.name, gap.Round(time.Millisecond), maxGap)
		}
	}
	c.WaitReady(t, pods, 2*time.Minute)
	t.Logf("all %d pods created during the rollouts are Ready", len(pods))
	checkNoFailedSandbox(t, c, ns)
	all := append(pair, pods...)
	k.WaitKuryrPorts(t, all, time.Minute)
	checkOnePortPerPod(t, c, k, all)
	if after := nodePortIDs(t, c, k); fmt.Sprint(after) != fmt.Sprint(nodePortsBefore) {
		t.Errorf("node ports changed: before %v, after %v", nodePortsBefore, after)
	}
}

func newPathProber(t *testing.T, from, to *corev1.Pod) *prober {
	t.Helper()
	n, err := framework.PodNetns(from.Status.PodIP)
	if err != nil {
		t.Fatalf("%s: %v", from.Name, err)
	}
	t.Cleanup(func() { n.Close() })
	p := newProber(fmt.Sprintf("%s (%s) -> %s (%s)", from.Name, from.Spec.NodeName, to.Name, to.Spec.NodeName),
		n, net.JoinHostPort(to.Status.PodIP, "8080"))
	if !p.ask() {
		t.Fatalf("%s: no answer before the rollouts", p.name)
	}
	return p
}

// createWhile creates a pod every 1.5 s, alternating nodes, until stop.
func createWhile(t *testing.T, c *framework.Cloud, ns string, stop <-chan struct{}) []*corev1.Pod {
	var out []*corev1.Pod
	tick := time.NewTicker(1500 * time.Millisecond)
	defer tick.Stop()
	for i := 0; ; i++ {
		select {
		case <-stop:
			return out
		case <-tick.C:
		}
		p := c.TestPod(ns, fmt.Sprintf("new-%d", i), c.PodNodes[i%len(c.PodNodes)])
		got, err := c.Kube.CoreV1().Pods(ns).Create(context.Background(), p, metav1.CreateOptions{})
		if err != nil {
			t.Errorf("create pod %s: %v", p.Name, err)
			continue
		}
		out = append(out, got)
	}
}

// checkNoFailedSandbox: no pod of ns had its sandbox (its network) fail,
// waited for a NotReady node's network, or got a Warning from kuryr but
// the one every nested-macvlan pod gets (policies not enforced). (A
// readiness probe refused before the pod's server listens is the pod's
// own start, not a failure.)
func checkNoFailedSandbox(t *testing.T, c *framework.Cloud, ns string) {
	t.Helper()
	evs, err := c.Kube.CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range evs.Items {
		fromKuryr := (e.Source.Component == "kuryr-controller" || e.ReportingController == "kuryr-controller") &&
			e.Reason != kuryrport.ReasonPoliciesNotEnforced
		if e.Type == corev1.EventTypeWarning && (fromKuryr || e.Reason == "FailedCreatePodSandBox" || e.Reason == "NetworkNotReady") {
			t.Errorf("pod %s: Warning %s: %s", e.InvolvedObject.Name, e.Reason, e.Message)
		}
	}
}

func checkOnePortPerPod(t *testing.T, c *framework.Cloud, k *framework.Kuryr, pods []*corev1.Pod) {
	t.Helper()
	want := map[string]bool{}
	for _, p := range pods {
		want[string(p.UID)] = true
	}
	framework.Eventually(t, time.Minute, time.Second, "one Neutron port per pod", func() (bool, error) {
		perPod := map[string]int{}
		for _, p := range c.ClusterPorts(t, k.Cluster) {
			if uid := names.PodUIDOf(p.Tags); want[uid] {
				perPod[uid]++
			}
		}
		for uid, n := range perPod {
			if n != 1 {
				return false, fmt.Errorf("pod %s has %d ports", uid, n)
			}
		}
		return len(perPod) == len(want), fmt.Errorf("%d of %d pods have a port", len(perPod), len(want))
	})
}

// nodePortIDs are the nodes' management port ids, by node.
func nodePortIDs(t *testing.T, c *framework.Cloud, k *framework.Kuryr) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for node, ps := range c.NodePorts(t, k.Cluster) {
		for _, p := range ps {
			out[node] = append(out[node], p.ID)
		}
	}
	return out
}
