//go:build e2e

package services

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kuryrv1 "github.com/kuryr-k8s/kuryr/api/v1"
	"github.com/kuryr-k8s/kuryr/test/e2e/framework"
)

// nodeAddrs are a node's InternalIP (the underlay, which other nodes
// reach) and its management port's address (which pods and VMs reach
// through the router).
type nodeAddrs struct{ internal, mgmt string }

func addressesOf(t *testing.T, c *framework.Cloud, node string) nodeAddrs {
	t.Helper()
	var a nodeAddrs
	framework.Eventually(t, time.Minute, 500*time.Millisecond, node+"'s addresses", func() (bool, error) {
		n, err := c.Kube.CoreV1().Nodes().Get(context.Background(), node, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, na := range n.Status.Addresses {
			if na.Type == corev1.NodeInternalIP && a.internal == "" {
				a.internal = na.Address
			}
		}
		var np kuryrv1.NodePort
		if err := json.Unmarshal([]byte(n.Annotations[kuryrv1.NodePortAnnotation]), &np); err != nil || len(np.IPs) == 0 {
			return false, fmt.Errorf("management port annotation %q", n.Annotations[kuryrv1.NodePortAnnotation])
		}
		a.mgmt = strings.Split(np.IPs[0], "/")[0]
		return a.internal != "", fmt.Errorf("no InternalIP")
	})
	return a
}

// fromNode runs cmd (busybox sh) inside node's network namespace, on the
// node's host network, and returns its last line ("" when it failed).
func fromNode(c *framework.Cloud, node, cmd string) string {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out, err := framework.InNetns(ctx, filepath.Join("/run/netns", c.NodeNetns(node)), "busybox", "sh", "-c", cmd)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if err != nil || len(lines) == 0 {
		return ""
	}
	return strings.TrimSpace(lines[len(lines)-1])
}

// nodeHTTP is an HTTP GET of addr:port printing the body's last line (the
// backend's name), with the node's busybox nc.
func nodeHTTP(addr string, port int32) string {
	return fmt.Sprintf(`printf 'GET / HTTP/1.0\r\n\r\n' | busybox nc -w 2 %s %d | tail -n 1`, addr, port)
}

// nodeReachesAll waits until requests from node to addr:port reach exactly
// the pods named.
func nodeReachesAll(t *testing.T, c *framework.Cloud, node, addr string, port int32, want []string) {
	t.Helper()
	sort.Strings(want)
	framework.Eventually(t, time.Minute, time.Second, fmt.Sprintf("%s:%d from %s reaches %v", addr, port, node, want), func() (bool, error) {
		seen := map[string]bool{}
		for range 8*len(want) + 8 {
			if a := fromNode(c, node, nodeHTTP(addr, port)); strings.HasPrefix(a, "web-") || strings.HasPrefix(a, "local-") {
				seen[a] = true
			}
		}
		var got []string
		for s := range seen {
			got = append(got, s)
		}
		sort.Strings(got)
		return strings.Join(got, ",") == strings.Join(want, ","), fmt.Errorf("reached %v", got)
	})
}

func nodePortOf(t *testing.T, svc *corev1.Service) int32 {
	t.Helper()
	if len(svc.Spec.Ports) == 0 || svc.Spec.Ports[0].NodePort == 0 {
		t.Fatalf("Service %s/%s has no node port: %+v", svc.Namespace, svc.Name, svc.Spec.Ports)
	}
	return svc.Spec.Ports[0].NodePort
}

// TestNodePortService: a NodePort Service with backends on both nodes
// answers at every node's InternalIP and management address, from every
// node's host network (the node itself included) and from a pod (as a VM
// on a tenant network routed to the nodes would); a LoadBalancer Service
// answers on its node ports too.
func TestNodePortService(t *testing.T) {
	c, k, ns := framework.Setup(t, "e2e-nodeport")
	if len(c.Nodes) < 2 {
		t.Fatalf("node ports are tested across nodes: the cloud has %v", c.Nodes)
	}
	backends := createBackends(t, c, ns, "web", 0, 2) // one on each node
	s := webService(ns, "web", "web")
	s.Spec.Type = corev1.ServiceTypeNodePort
	svc := createService(t, c, s)
	waitKLB(t, k, ns, "web", 2, 2*time.Minute)
	port := nodePortOf(t, svc)
	addrs := map[string]nodeAddrs{}
	for _, node := range c.Nodes {
		addrs[node] = addressesOf(t, c, node)
	}
	start := time.Now()
	for _, from := range c.Nodes {
		for _, to := range c.Nodes {
			nodeReachesAll(t, c, from, addrs[to].internal, port, podNames(backends))
			nodeReachesAll(t, c, from, addrs[to].mgmt, port, podNames(backends))
		}
	}
	t.Logf("node port %d answers on every node's InternalIP and management address from every node, %s after the load balancer was Ready",
		port, time.Since(start).Round(time.Millisecond))
	client := clientPod(t, c, ns, "client", c.Nodes[0])
	for _, to := range c.Nodes {
		reachesAll(t, client, httpCmd(addrs[to].mgmt, int(port)), podNames(backends), time.Minute)
	}

	lbs := webService(ns, "web-lb", "web")
	lbs.Spec.Type = corev1.ServiceTypeLoadBalancer
	lb := createService(t, c, lbs)
	waitKLB(t, k, ns, "web-lb", 2, 2*time.Minute)
	lbPort := nodePortOf(t, lb)
	for _, to := range c.Nodes {
		nodeReachesAll(t, c, c.Nodes[0], addrs[to].internal, lbPort, podNames(backends))
	}
}

// TestNodePortLocal: with externalTrafficPolicy Local and a backend on the
// first node only, that node's node port answers (from the other node)
// with that backend, the other node's does not answer, and the
// healthCheckNodePort answers 200 on the first node and 503 on the other.
func TestNodePortLocal(t *testing.T) {
	c, k, ns := framework.Setup(t, "e2e-nodeport-local")
	if len(c.Nodes) < 2 {
		t.Fatalf("externalTrafficPolicy Local is tested across nodes: the cloud has %v", c.Nodes)
	}
	with, without := c.Nodes[0], c.Nodes[1]
	p, err := c.Kube.CoreV1().Pods(ns).Create(context.Background(), backend(c, ns, "local-0", with, "local"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c.WaitReady(t, []*corev1.Pod{p}, 3*time.Minute)
	s := webService(ns, "web", "local")
	s.Spec.Type = corev1.ServiceTypeLoadBalancer
	s.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyLocal
	svc := createService(t, c, s)
	waitKLB(t, k, ns, "web", 1, 2*time.Minute)
	port, hc := nodePortOf(t, svc), svc.Spec.HealthCheckNodePort
	if hc == 0 {
		t.Fatalf("no healthCheckNodePort allocated: %+v", svc.Spec)
	}
	on, off := addressesOf(t, c, with), addressesOf(t, c, without)

	nodeReachesAll(t, c, without, on.internal, port, []string{"local-0"})
	framework.Eventually(t, time.Minute, time.Second, fmt.Sprintf("no answer at %s:%d (no local endpoint)", off.internal, port), func() (bool, error) {
		for range 3 {
			if a := fromNode(c, with, nodeHTTP(off.internal, port)); strings.HasPrefix(a, "local-") {
				return false, fmt.Errorf("answered %q", a)
			}
		}
		return true, nil
	})
	status := func(from, addr string) string {
		return fromNode(c, from, fmt.Sprintf(`printf 'GET / HTTP/1.0\r\n\r\n' | busybox nc -w 2 %s %d | head -n 1`, addr, hc))
	}
	framework.Eventually(t, time.Minute, time.Second, "health checks 200 on "+with+" and 503 on "+without, func() (bool, error) {
		got200, got503 := status(without, on.internal), status(with, off.internal)
		return strings.Contains(got200, " 200") && strings.Contains(got503, " 503"),
			fmt.Errorf("%s: %q, %s: %q", with, got200, without, got503)
	})
}
