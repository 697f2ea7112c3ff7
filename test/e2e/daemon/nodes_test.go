//go:build e2e

package daemon

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	kuryrv1 "github.com/kuryr-k8s/kuryr/api/v1"
	"github.com/kuryr-k8s/kuryr/test/e2e/framework"
)

// nodeAddress is the address of a node's management port, from the
// annotation kuryr-controller wrote, once its Neutron port exists.
func nodeAddress(t *testing.T, c *framework.Cloud, node string) string {
	t.Helper()
	var addr string
	framework.Eventually(t, time.Minute, 500*time.Millisecond, node+"'s management port", func() (bool, error) {
		n, err := c.Kube.CoreV1().Nodes().Get(context.Background(), node, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		var np kuryrv1.NodePort
		if err := json.Unmarshal([]byte(n.Annotations[kuryrv1.NodePortAnnotation]), &np); err != nil || len(np.IPs) == 0 {
			return false, fmt.Errorf("annotation %q", n.Annotations[kuryrv1.NodePortAnnotation])
		}
		addr = strings.Split(np.IPs[0], "/")[0]
		return true, nil
	})
	return addr
}

// TestNodesReachPods: every node reaches every pod, on its own node and on
// the other, without NAT (pods see the node's management address), and the
// kubelet's httpGet readiness probe fails and recovers with the pod.
func TestNodesReachPods(t *testing.T) {
	c, _, ns := framework.Setup(t, "e2e-probe")
	var created []*corev1.Pod
	for i, node := range c.Nodes {
		p := c.TestPod(ns, fmt.Sprintf("p%d", i), node)
		// Readiness over HTTP on a file the test removes; liveness stays TCP.
		p.Spec.Containers[0].ReadinessProbe.ProbeHandler = corev1.ProbeHandler{
			HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromInt32(8080)}}
		p.Spec.Containers[0].LivenessProbe.ProbeHandler = corev1.ProbeHandler{
			TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(8080)}}
		got, err := c.Kube.CoreV1().Pods(ns).Create(context.Background(), p, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		created = append(created, got)
	}
	start := time.Now()
	pods := c.WaitReady(t, created, 2*time.Minute)
	t.Logf("%d pods Ready (httpGet readiness from their nodes) %s after creation", len(pods), time.Since(start).Round(time.Millisecond))
	for _, p := range pods {
		probeFrom := nodeAddress(t, c, p.Spec.NodeName)
		framework.Eventually(t, 30*time.Second, time.Second, p.Name+" probed from "+probeFrom, func() (bool, error) {
			logs := c.Logs(t, p)
			return strings.Contains(logs, probeFrom+"]:"), fmt.Errorf("no request from its node's address (NAT?); log:\n%s", logs)
		})
		for _, node := range c.Nodes {
			nodeNS := framework.OpenNetns(t, c.NodeNetns(node))
			if err := framework.Ping(nodeNS, p.Status.PodIP, 2); err != nil {
				t.Errorf("node %s cannot ping pod %s on %s: %v", node, p.Name, p.Spec.NodeName, err)
			}
			out, err := framework.InNetns(context.Background(), nodeNS.Path(), "busybox", "sh", "-c",
				fmt.Sprintf(`printf 'GET / HTTP/1.0\r\n\r\n' | busybox nc -w 3 %s 8080`, p.Status.PodIP))
			if err != nil || !strings.Contains(out, p.Name) {
				t.Errorf("node %s: HTTP to pod %s: %v %q", node, p.Name, err, out)
			}
		}
	}
	probeFailsAndRecovers(t, c, pods[0])
}

func probeFailsAndRecovers(t *testing.T, c *framework.Cloud, p *corev1.Pod) {
	t.Helper()
	if out, err := framework.Exec(t, p, "rm", "/www/healthz"); err != nil {
		t.Fatalf("rm: %v %s", err, out)
	}
	start := time.Now()
	framework.Eventually(t, time.Minute, 250*time.Millisecond, p.Name+" not Ready", func() (bool, error) {
		got, err := c.Kube.CoreV1().Pods(p.Namespace).Get(context.Background(), p.Name, metav1.GetOptions{})
		return err == nil && !framework.IsReady(got), err
	})
	t.Logf("%s not Ready %s after its health file went", p.Name, time.Since(start).Round(time.Millisecond))
	if out, err := framework.Exec(t, p, "sh", "-c", "echo ok > /www/healthz"); err != nil {
		t.Fatalf("restore: %v %s", err, out)
	}
	start = time.Now()
	c.WaitReady(t, []*corev1.Pod{p}, time.Minute)
	t.Logf("%s Ready again %s after its health file came back", p.Name, time.Since(start).Round(time.Millisecond))
}
