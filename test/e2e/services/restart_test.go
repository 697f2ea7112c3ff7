//go:build e2e

package services

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/kuryr-k8s/kuryr/test/e2e/framework"
)

// TestControllerKilledWhileCreatingServices: kill -9 the controller while
// 10 Services are being created; after its restart every Service has
// exactly one load balancer and answers; a further restart makes no Octavia
// write at all (everything is adopted).
func TestControllerKilledWhileCreatingServices(t *testing.T) {
	c, k, ns := framework.Setup(t, "e2e-svccrash")
	backends := createBackends(t, c, ns, "web", 0, 2)
	cl := clientPod(t, c, ns, "client", c.Nodes[1%len(c.Nodes)])
	const n = 10
	var svcs []*corev1.Service
	for i := 0; i < n; i++ {
		svcs = append(svcs, createService(t, c, webService(ns, fmt.Sprintf("web-%d", i), "web")))
	}
	time.Sleep(2 * time.Second) // some load balancers created, some not yet
	k.Crash(t, "kuryr-controller")
	start := time.Now()
	for _, s := range svcs {
		waitKLB(t, k, ns, s.Name, 2, 4*time.Minute)
	}
	t.Logf("all %d Services Ready %s after the controller was killed", n, time.Since(start).Round(time.Millisecond))
	for _, s := range svcs {
		if lbs := serviceLBs(t, c, k.Cluster, string(s.UID)); len(lbs) != 1 {
			t.Errorf("Service %s has %d load balancers, want 1", s.Name, len(lbs))
		}
	}
	reachesAll(t, cl, httpCmd(svcs[n-1].Spec.ClusterIP, 80), podNames(backends), time.Minute)

	// A clean restart adopts everything: not one Octavia write.
	k.Controller(t, "restart")
	time.Sleep(20 * time.Second)
	for _, s := range svcs {
		waitKLB(t, k, ns, s.Name, 2, time.Minute)
	}
	writes, err := c.OpenStackWrites("load-balancer")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("Octavia writes by the restarted controller with %d Services (and the cluster's others): %.0f", n, writes)
	if writes != 0 {
		t.Errorf("the restarted controller made %.0f Octavia writes, want 0", writes)
	}
}
