//go:build e2e

package services

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kuryr-k8s/kuryr/pkg/names"
	"github.com/kuryr-k8s/kuryr/pkg/octavia"
	"github.com/kuryr-k8s/kuryr/test/e2e/framework"
	"github.com/kuryr-k8s/kuryr/test/faultproxy"
)

// TestServiceChurnUnderOctaviaFaults: 10 % of the controller's Octavia calls
// fail (5xx), are dropped, or commit without an answer, while Services and
// their backends churn and the sweep runs every 3 s. Once the faults stop,
// every live Service has exactly one load balancer with its members, and
// nothing of a deleted Service is left.
func TestServiceChurnUnderOctaviaFaults(t *testing.T) {
	proxy := framework.FaultProxy(t, "OCTAVIA_URL")
	c := framework.Connect(t)
	k := c.ConnectKuryr(t)
	url := c.ServeOnNodes(t, proxy)
	k.Controller(t, "restart", "--set", "octavia.endpoint_override="+url, "--set", "neutron.timeout=10",
		"--set", "controller.cleanup_period=3")
	t.Cleanup(func() { k.Controller(t, "restart") })
	ns := framework.Name("e2e-svcfaults")
	c.CreateNamespace(t, ns)
	backends := createBackends(t, c, ns, "web", 0, 2)

	proxy.Set(faultproxy.Faults{ErrorRate: 0.04, DropRate: 0.02, CommitDropRate: 0.03, CommitHangRate: 0.01, HangFor: 8 * time.Second})
	live := map[string]*corev1.Service{}
	var gone []*corev1.Service
	next := 0
	create := func(n int) {
		for i := 0; i < n; i++ {
			s := createService(t, c, webService(ns, fmt.Sprintf("web-%d", next), "web"))
			live[s.Name] = s
			next++
		}
	}
	// 6 Services and 2 waves in CI's time; 8 and 3 in the long tier.
	first, waves := 6, 2
	if framework.Long() {
		first, waves = 8, 3
	}
	create(first)
	for wave := 0; wave < waves; wave++ {
		time.Sleep(10 * time.Second)
		for name, s := range live { // delete two
			deleteService(t, c, ns, name)
			delete(live, name)
			gone = append(gone, s)
			if len(gone)%2 == 0 {
				break
			}
		}
		create(2)
		backends = append(backends, createBackends(t, c, ns, "web", 2+wave, 1)...)
	}
	// One backend goes: members follow.
	if err := c.Kube.CoreV1().Pods(ns).Delete(context.Background(), backends[0].Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(10 * time.Second)
	proxy.Set(faultproxy.Faults{})
	t.Logf("faults injected: %+v", proxy.Stats())

	start := time.Now()
	members := len(backends) - 1
	for name, s := range live {
		waitKLB(t, k, ns, name, members, 8*time.Minute)
		if lbs := serviceLBs(t, c, k.Cluster, string(s.UID)); len(lbs) != 1 {
			t.Errorf("Service %s has %d load balancers, want 1", name, len(lbs))
		}
	}
	t.Logf("%d live Services Ready with %d members each %s after the faults stopped", len(live), members, time.Since(start).Round(time.Millisecond))
	framework.Eventually(t, 3*time.Minute, 2*time.Second, "nothing left of the deleted Services", func() (bool, error) {
		for _, s := range gone {
			if lbs := serviceLBs(t, c, k.Cluster, string(s.UID)); len(lbs) > 0 {
				return false, fmt.Errorf("Service %s still has %d load balancers", s.Name, len(lbs))
			}
		}
		return true, nil
	})
	t.Logf("the %d deleted Services' load balancers are gone %s after the faults stopped", len(gone), time.Since(start).Round(time.Millisecond))
	// After such a campaign the ovn provider still works through requests
	// of the campaign: a status it reports late puts a load balancer kuryr
	// deleted back to ACTIVE or ERROR, and kuryr deletes it again (seen
	// taking 3 min on a 2-core machine).
	c.DeleteNamespaceWithin(t, ns, 6*time.Minute)
	for _, s := range live {
		lbs, err := octavia.New(c.OS.LoadBalancer).FindLoadBalancers(context.Background(),
			[]string{names.ClusterTag(k.Cluster), names.ServiceTag(string(s.UID))})
		if err != nil || len(lbs) != 0 {
			t.Errorf("Service %s: %d load balancers left after its namespace went (%v)", s.Name, len(lbs), err)
			for _, lb := range lbs {
				t.Logf("left: load balancer %s %s, created %s", lb.ID, lb.ProvisioningStatus, lb.CreatedAt.Format(time.RFC3339Nano))
			}
		}
	}
}
