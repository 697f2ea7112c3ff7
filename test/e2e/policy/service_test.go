//go:build e2e

package policy

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/kuryr-k8s/kuryr/test/e2e/framework"
)

// serviceUp bounds how long a new Service's load balancer may take to
// answer at its VIP.
const serviceUp = 3 * time.Minute

// TestServiceTraffic: traffic through a Service's ClusterIP obeys the
// policies that direct traffic to its backends obeys. An ingress policy on
// the backend admitting one client lets that client through the VIP and
// not another; an egress policy on a client admitting the backend pods on
// their port 8080 lets it reach the Service on port 80, and neither
// another Service nor other ports or pods.
func TestServiceTraffic(t *testing.T) {
	f := newFixture(t, "np-svc", map[string]map[string]string{"a": nil},
		podSpec{name: "srv-0", ns: "a", node: 0, labels: labels("app", "web"), server: true},
		podSpec{name: "srv-1", ns: "a", node: 1, labels: labels("app", "other"), server: true},
		podSpec{name: "cl-a", ns: "a", node: 1},
		podSpec{name: "cl-b", ns: "a", node: 0},
	)
	start := time.Now()
	web := f.service(t, "web", "web", "srv-0")
	other := f.service(t, "other", "other", "srv-1")
	// Load balancers take a while: wait here, not within await's timeout.
	up := join(f.allow(t, "cl-a", web, other), f.allow(t, "cl-b", web, other))
	framework.Eventually(t, serviceUp, time.Second, "both Services answering at their VIPs", func() (bool, error) {
		if bad, errs := round(t, up); len(bad)+len(errs) > 0 {
			return false, errors.New(strings.Join(append(bad, errs...), "; "))
		}
		return true, nil
	})
	t.Logf("both Services answer at their VIPs %s after creation", fmtDur(time.Since(start)))
	tcp := func(pod string, port int) dest { return f.tcp(t, pod, port) }

	f.run(t, "ingress", func(t *testing.T) {
		np := netpol(f.ns("a"), "web-from-a", ingressOnly, "app", "web")
		np.Spec.Ingress = []networkingv1.NetworkPolicyIngressRule{from(nil, podPeer("pod", "cl-a"))}
		since := f.apply(t, np)
		await(t, since, "the web backend answers cl-a only, through the VIP as directly", join(
			f.allow(t, "cl-a", web, tcp("srv-0", portWeb)),
			f.deny(t, "cl-b", web, tcp("srv-0", portWeb)),
			f.allow(t, "cl-b", other),
		)...)
	})

	f.run(t, "egress", func(t *testing.T) {
		np := netpol(f.ns("a"), "a-to-web", egressOnly, "pod", "cl-a")
		np.Spec.Egress = []networkingv1.NetworkPolicyEgressRule{to(ports(port(portWeb)), podPeer("app", "web"))}
		since := f.apply(t, np)
		await(t, since, "cl-a reaches the web Service on 80 (its backends on 8080) and nothing else", join(
			f.allow(t, "cl-a", web, tcp("srv-0", portWeb)),
			f.deny(t, "cl-a", other, tcp("srv-1", portWeb), tcp("srv-0", port8081), tcp("cl-b", portWeb)),
			f.allow(t, "cl-b", web, other),
		)...)
	})
}

// service creates a ClusterIP Service in namespace a selecting app=app,
// port 80 to the pods' port 8080, and returns its VIP as a destination
// that backend answers.
func (f *fixture) service(t *testing.T, name, app, backend string) dest {
	t.Helper()
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: f.ns("a"), Name: name},
		Spec: corev1.ServiceSpec{Selector: labels("app", app),
			Ports: []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(portWeb)}}}}
	got, err := f.c.Kube.CoreV1().Services(svc.Namespace).Create(context.Background(), svc, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create Service %s: %v", name, err)
	}
	return dest{proto: "tcp", ip: got.Spec.ClusterIP, port: 80, who: f.pod(t, backend).Name}
}
