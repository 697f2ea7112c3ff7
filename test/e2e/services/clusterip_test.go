//go:build e2e

package services

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/kuryr-k8s/kuryr/test/e2e/framework"
)

// TestClusterIPService: a Service with a TCP and a UDP port reaches every
// ready backend from pods on both nodes; a backend that turns unready
// leaves the pool and comes back; a backend reaches its own Service
// (hairpin); members follow a scale 3 -> 6 -> 1; a port change moves the
// listener; the load balancer is unique and goes with the Service.
func TestClusterIPService(t *testing.T) {
	c, k, ns := framework.Setup(t, "e2e-svc")
	backends := createBackends(t, c, ns, "web", 0, 3)
	var clients []*corev1.Pod
	for i, node := range c.Nodes {
		clients = append(clients, clientPod(t, c, ns, fmt.Sprintf("client-%d", i), node))
	}
	start := time.Now()
	svc := createService(t, c, webService(ns, "web", "web",
		corev1.ServicePort{Name: "http", Port: 80, TargetPort: intstr.FromString("web")},
		corev1.ServicePort{Name: "echo", Port: 9090, Protocol: corev1.ProtocolUDP, TargetPort: intstr.FromString("echo")}))
	klb := waitKLB(t, k, ns, "web", 6, 2*time.Minute)
	t.Logf("KuryrLoadBalancer Ready (VIP %s, LB %s) %s after the Service was created", klb.Spec.IP,
		klb.Status.LoadBalancer.ID, time.Since(start).Round(time.Millisecond))
	vip := svc.Spec.ClusterIP
	for _, cl := range clients {
		reachesAll(t, cl, httpCmd(vip, 80), podNames(backends), time.Minute)
		reachesAll(t, cl, "testapp udp-ask "+vip+":9090 1", podNames(backends), time.Minute)
	}
	t.Logf("TCP and UDP through the VIP reach all 3 backends from pods on %d nodes, %s after creation",
		len(clients), time.Since(start).Round(time.Millisecond))
	if lbs := serviceLBs(t, c, k.Cluster, string(svc.UID)); len(lbs) != 1 {
		t.Fatalf("%d load balancers for the Service, want 1", len(lbs))
	}

	// A backend that turns unready leaves the pool, and comes back.
	if _, err := framework.Exec(t, backends[0], "rm", "/www/healthz"); err != nil {
		t.Fatal(err)
	}
	start = time.Now()
	waitKLB(t, k, ns, "web", 4, time.Minute)
	t.Logf("unready backend left the pool %s after its probe started failing", time.Since(start).Round(time.Millisecond))
	reachesAll(t, clients[0], httpCmd(vip, 80), podNames(backends[1:]), time.Minute)
	if _, err := framework.Exec(t, backends[0], "sh", "-c", "echo ok >/www/healthz"); err != nil {
		t.Fatal(err)
	}
	waitKLB(t, k, ns, "web", 6, time.Minute)

	// Hairpin: a backend reaches its own Service, itself included.
	reachesAll(t, backends[1], httpCmd(vip, 80), podNames(backends), time.Minute)

	// Scale 3 -> 6 -> 1.
	more := createBackends(t, c, ns, "web", 3, 3)
	all := append(append([]*corev1.Pod{}, backends...), more...)
	waitKLB(t, k, ns, "web", 12, 2*time.Minute)
	reachesAll(t, clients[1], httpCmd(vip, 80), podNames(all), time.Minute)
	for _, p := range all[1:] {
		if err := c.Kube.CoreV1().Pods(ns).Delete(context.Background(), p.Name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	start = time.Now()
	waitKLB(t, k, ns, "web", 2, 2*time.Minute)
	t.Logf("scaled 6 -> 1: members followed in %s", time.Since(start).Round(time.Millisecond))
	reachesAll(t, clients[0], httpCmd(vip, 80), podNames(all[:1]), time.Minute)

	// A port change moves the listener.
	cur, err := c.Kube.CoreV1().Services(ns).Get(context.Background(), "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cur.Spec.Ports[0].Port = 8081
	if _, err := c.Kube.CoreV1().Services(ns).Update(context.Background(), cur, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	reachesAll(t, clients[1], httpCmd(vip, 8081), podNames(all[:1]), time.Minute)
	if got := answers(t, clients[1], httpCmd(vip, 80), 3); len(got) != 0 {
		t.Errorf("the old port 80 still answers: %v", got)
	}

	deleteService(t, c, ns, "web")
	framework.Eventually(t, 2*time.Minute, time.Second, "the Service's load balancer deleted", func() (bool, error) {
		lbs := serviceLBs(t, c, k.Cluster, string(svc.UID))
		return len(lbs) == 0, fmt.Errorf("%d left", len(lbs))
	})
}
