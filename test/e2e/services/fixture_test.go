//go:build e2e

// Package services tests Services served by Octavia load balancers on the
// local cloud: traffic through the VIPs from pods on every node, members
// following endpoints, LoadBalancer floating IPs, DNS and the API service,
// and that nothing is left in Octavia afterwards.
package services

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kuryrv1 "github.com/kuryr-k8s/kuryr/api/v1"
	"github.com/kuryr-k8s/kuryr/pkg/names"
	"github.com/kuryr-k8s/kuryr/pkg/octavia"
	"github.com/kuryr-k8s/kuryr/test/e2e/framework"
)

// backend is a test pod serving HTTP on 8080 (answering its name) and UDP
// on 9090, labelled app=<app>; readiness is httpGet /healthz.
func backend(c *framework.Cloud, ns, name, node, app string) *corev1.Pod {
	p := c.TestPod(ns, name, node)
	p.Labels = map[string]string{"app": app}
	ct := &p.Spec.Containers[0]
	ct.Command = []string{"sh", "-c", "testapp udp-serve 9090 & exec /bin/serve"}
	ct.Ports = []corev1.ContainerPort{{Name: "web", ContainerPort: 8080}, {Name: "echo", ContainerPort: 9090, Protocol: corev1.ProtocolUDP}}
	ct.ReadinessProbe.ProbeHandler = corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromInt32(8080)}}
	ct.ReadinessProbe.PeriodSeconds = 1
	return p
}

// createBackends creates n backends spread over PodNodes, returns them Ready.
func createBackends(t *testing.T, c *framework.Cloud, ns, app string, first, n int) []*corev1.Pod {
	t.Helper()
	var created []*corev1.Pod
	for i := first; i < first+n; i++ {
		p, err := c.Kube.CoreV1().Pods(ns).Create(context.Background(),
			backend(c, ns, fmt.Sprintf("%s-%d", app, i), c.PodNodes[i%len(c.PodNodes)], app), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		created = append(created, p)
	}
	return c.WaitReady(t, created, 3*time.Minute)
}

// client is a pod to send traffic from, on node.
func clientPod(t *testing.T, c *framework.Cloud, ns, name, node string) *corev1.Pod {
	t.Helper()
	p := c.TestPod(ns, name, node)
	p.Spec.DNSPolicy = corev1.DNSClusterFirst
	created, err := c.Kube.CoreV1().Pods(ns).Create(context.Background(), p, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return c.WaitReady(t, []*corev1.Pod{created}, 3*time.Minute)[0]
}

func webService(ns, name, app string, ports ...corev1.ServicePort) *corev1.Service {
	if len(ports) == 0 {
		ports = []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromString("web")}}
	}
	return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: corev1.ServiceSpec{Selector: map[string]string{"app": app}, Ports: ports}}
}

func createService(t *testing.T, c *framework.Cloud, s *corev1.Service) *corev1.Service {
	t.Helper()
	got, err := c.Kube.CoreV1().Services(s.Namespace).Create(context.Background(), s, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// waitKLB waits until the Service's KuryrLoadBalancer is Ready with
// members members in all (any number when negative), and returns it.
func waitKLB(t *testing.T, k *framework.Kuryr, ns, name string, members int, timeout time.Duration) *kuryrv1.KuryrLoadBalancer {
	t.Helper()
	var klb kuryrv1.KuryrLoadBalancer
	framework.Eventually(t, timeout, 500*time.Millisecond, fmt.Sprintf("KuryrLoadBalancer %s/%s Ready with %d members", ns, name, members),
		func() (bool, error) {
			if err := k.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &klb); err != nil {
				return false, err
			}
			ready := meta.FindStatusCondition(klb.Status.Conditions, kuryrv1.ConditionReady)
			if ready == nil || ready.Status != metav1.ConditionTrue || (members >= 0 && klb.Status.Members != members) {
				return false, fmt.Errorf("members %d, Ready %+v", klb.Status.Members, ready)
			}
			return true, nil
		})
	return &klb
}

// answers runs n requests from inside p (each a new connection, so a new
// source port) and returns the distinct answers (failures left out).
func answers(t *testing.T, p *corev1.Pod, cmd string, n int) []string {
	t.Helper()
	out, _ := framework.Exec(t, p, "sh", "-c", fmt.Sprintf("for i in $(seq %d); do %s; echo; done", n, cmd))
	seen := map[string]bool{}
	for _, l := range strings.Split(out, "\n") {
		if l = strings.TrimSpace(l); l != "" && l != "-" && !strings.Contains(l, "timed out") && !strings.Contains(l, "nc:") &&
			!strings.Contains(l, "no answer") { // a UDP request lost
			seen[l] = true
		}
	}
	var list []string
	for s := range seen {
		list = append(list, s)
	}
	sort.Strings(list)
	return list
}

// reachesAll waits until requests from p reach exactly the pods named.
func reachesAll(t *testing.T, p *corev1.Pod, cmd string, want []string, timeout time.Duration) {
	t.Helper()
	sort.Strings(want)
	err := framework.Poll(timeout, time.Second, fmt.Sprintf("%s from %s reaches %v", cmd, p.Name, want), func() (bool, error) {
		got := answers(t, p, cmd, 8*len(want)+8)
		if strings.Join(got, ",") != strings.Join(want, ",") {
			return false, fmt.Errorf("reached %v", got)
		}
		return true, nil
	})
	if err != nil {
		explainUnreached(t, p, cmd, want)
		t.Fatal(err)
	}
}

// httpCmd is an HTTP GET of host:port printing the body (the backend's
// name). busybox's nc, as Debian's static busybox wget crashes.
func httpCmd(host string, port int) string {
	return fmt.Sprintf(`printf 'GET / HTTP/1.0\r\n\r\n' | nc -w 2 %s %d | tail -n 1`, host, port)
}

func podNames(pods []*corev1.Pod) []string {
	var out []string
	for _, p := range pods {
		out = append(out, p.Name)
	}
	return out
}

// serviceLBs are the load balancers tagged with a Service's UID.
func serviceLBs(t *testing.T, c *framework.Cloud, cluster string, uid string) []octavia.LoadBalancer {
	t.Helper()
	lbs, err := octavia.New(c.OS.LoadBalancer).FindLoadBalancers(context.Background(),
		[]string{names.ClusterTag(cluster), names.ServiceTag(uid)})
	if err != nil {
		t.Fatal(err)
	}
	return lbs
}

func deleteService(t *testing.T, c *framework.Cloud, ns, name string) {
	t.Helper()
	if err := c.Kube.CoreV1().Services(ns).Delete(context.Background(), name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
}
