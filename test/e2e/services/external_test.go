//go:build e2e

package services

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kuryr-k8s/kuryr/pkg/neutron"
	"github.com/kuryr-k8s/kuryr/test/e2e/framework"
)

// TestLoadBalancerService: a LoadBalancer Service gets a floating IP on its
// VIP, published in status.loadBalancer, reached from the outside
// namespace; what the provider cannot enforce is a Warning Event; the
// floating IP is released with the Service.
func TestLoadBalancerService(t *testing.T) {
	c := framework.Connect(t)
	k := c.ConnectKuryr(t)
	ns := framework.Name("e2e-lbsvc")
	c.CreateNamespace(t, ns)
	backends := createBackends(t, c, ns, "web", 0, 2)
	s := webService(ns, "web", "web")
	s.Spec.Type = corev1.ServiceTypeLoadBalancer
	s.Spec.LoadBalancerSourceRanges = []string{"172.24.4.0/24"}
	start := time.Now()
	svc := createService(t, c, s)
	klb := waitKLB(t, k, ns, "web", 2, 2*time.Minute)
	if klb.Status.FloatingIP == nil || klb.Status.FloatingIP.AllocMethod != "pool" {
		t.Fatalf("floating IP %+v, want one kuryr allocated", klb.Status.FloatingIP)
	}
	var ip string
	framework.Eventually(t, time.Minute, time.Second, "status.loadBalancer.ingress", func() (bool, error) {
		cur, err := c.Kube.CoreV1().Services(ns).Get(context.Background(), "web", metav1.GetOptions{})
		if err != nil || len(cur.Status.LoadBalancer.Ingress) == 0 {
			return false, err
		}
		ip = cur.Status.LoadBalancer.Ingress[0].IP
		return ip == klb.Status.FloatingIP.IP, fmt.Errorf("ingress %s, floating IP %s", ip, klb.Status.FloatingIP.IP)
	})
	outside := framework.OpenNetns(t, c.OutsideNetns)
	want := map[string]bool{}
	for _, b := range backends {
		want[b.Name] = true
	}
	seen := map[string]bool{}
	framework.Eventually(t, 2*time.Minute, time.Second, "every backend through the floating IP "+ip+" from outside", func() (bool, error) {
		out, err := framework.InNetns(context.Background(), outside.Path(), "busybox", "sh", "-c",
			fmt.Sprintf(`printf 'GET / HTTP/1.0\r\n\r\n' | busybox nc -w 2 %s 80 | tail -n 1`, ip))
		if err == nil {
			seen[strings.TrimSpace(out)] = true
		}
		return len(seen) == len(want), fmt.Errorf("reached %v (last error %v)", seen, err)
	})
	t.Logf("LoadBalancer Service answered on %s from outside %s after creation", ip, time.Since(start).Round(time.Millisecond))
	framework.Eventually(t, 30*time.Second, time.Second, "a Warning Event about source ranges", func() (bool, error) {
		evs, err := c.Kube.EventsV1().Events(ns).List(context.Background(), metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		for _, e := range evs.Items {
			if e.Regarding.Name == "web" && e.Type == corev1.EventTypeWarning && strings.Contains(e.Note, "loadBalancerSourceRanges") {
				return true, nil
			}
		}
		return false, fmt.Errorf("%d events, none about loadBalancerSourceRanges", len(evs.Items))
	})

	deleteService(t, c, ns, "web")
	framework.Eventually(t, 2*time.Minute, time.Second, "load balancer and floating IP released", func() (bool, error) {
		fips, err := neutron.New(c.OS.Network).ListFloatingIPs(context.Background(),
			neutron.FloatingIPFilter{Tags: []string{neutron.ServiceTag(string(svc.UID))}})
		if err != nil {
			return false, err
		}
		lbs := serviceLBs(t, c, k.Cluster, string(svc.UID))
		return len(fips) == 0 && len(lbs) == 0, fmt.Errorf("%d floating IPs, %d load balancers left", len(fips), len(lbs))
	})
}
