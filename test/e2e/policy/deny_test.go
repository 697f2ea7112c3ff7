//go:build e2e

package policy

import (
	"context"
	"fmt"
	"testing"
	"time"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kuryr-k8s/kuryr/test/e2e/framework"
)

// TestDefaultDeny: a policy selecting every pod of a namespace for ingress
// with no rule denies every client, in the namespace and outside, while
// the node still reaches its own pods (their kubelet probes pass, and a
// connection from the node's namespace is answered); deleting it opens
// traffic again. A policy for egress with no rule cuts its pods off from
// everyone but leaves other pods, and traffic to its pods, alone. Policy
// types left out are implied: ingress always, egress when there are egress
// rules; ingress rules of an egress-only policy are ignored.
func TestDefaultDeny(t *testing.T) {
	f := newFixture(t, "np-deny", map[string]map[string]string{"a": nil, "b": nil},
		podSpec{name: "srv-0", ns: "a", node: 0, labels: labels("role", "server"), server: true},
		podSpec{name: "srv-1", ns: "a", node: 1, labels: labels("role", "server"), server: true},
		podSpec{name: "cl-0", ns: "a", node: 1, labels: labels("role", "client")},
		podSpec{name: "cl-1", ns: "a", node: 0, labels: labels("role", "other")},
		podSpec{name: "out-0", ns: "b", node: 0, labels: labels("role", "client")},
	)
	web := func(pod string) dest { return f.tcp(t, pod, portWeb) }

	f.run(t, "deny-all-ingress", func(t *testing.T) {
		since := f.apply(t, netpol(f.ns("a"), "deny-ingress", ingressOnly))
		await(t, since, "ingress to namespace a denied", join(
			f.deny(t, "cl-0", web("srv-0"), web("srv-1"), f.udp(t, "srv-0", portEcho)),
			f.deny(t, "cl-1", web("srv-0"), web("srv-1"), web("cl-0")),
			f.deny(t, "out-0", web("srv-0"), web("srv-1"), f.udp(t, "srv-1", portEcho), web("cl-0")),
			// Egress from the namespace is not restricted.
			f.allow(t, "cl-0", web("out-0")),
		)...)
		for _, p := range []string{"srv-0", "srv-1", "cl-0"} {
			f.fromNode(t, p)
		}
		f.staysReady(t, 6*time.Second, "srv-0", "srv-1", "cl-0", "cl-1")

		since = f.deletePolicy(t, f.ns("a"), "deny-ingress")
		await(t, since, "deny-all ingress deleted: answered again", join(
			f.allow(t, "cl-0", web("srv-0"), web("srv-1"), f.udp(t, "srv-0", portEcho)),
			f.allow(t, "out-0", web("srv-0"), web("srv-1"), web("cl-0")),
		)...)
	})

	f.run(t, "deny-all-egress", func(t *testing.T) {
		since := f.apply(t, netpol(f.ns("a"), "deny-egress", egressOnly, "role", "client"))
		await(t, since, "egress of cl-0 denied, others unrestricted", join(
			f.deny(t, "cl-0", web("srv-0"), web("srv-1"), web("cl-1"), web("out-0"), f.udp(t, "srv-1", portEcho)),
			f.allow(t, "cl-1", web("srv-0"), web("srv-1"), web("out-0")),
			// Ingress to the isolated pod, and its answers, are not.
			f.allow(t, "out-0", web("cl-0"), web("srv-0")),
			f.allow(t, "srv-1", web("cl-0")),
		)...)
		f.staysReady(t, 4*time.Second, "cl-0")
	})

	f.run(t, "implicit-ingress", func(t *testing.T) {
		// No policy types, egress rules only: isolated both ways, egress to all.
		np := netpol(f.ns("a"), "implicit", nil, "role", "server")
		np.Spec.Egress = []networkingv1.NetworkPolicyEgressRule{to(nil)}
		since := f.apply(t, np)
		await(t, since, "implied ingress isolation of the servers", join(
			f.deny(t, "cl-0", web("srv-0"), web("srv-1")),
			f.deny(t, "out-0", web("srv-0"), web("srv-1")),
			f.deny(t, "srv-0", web("srv-1")),
			f.allow(t, "srv-0", web("out-0"), web("cl-0")),
			f.allow(t, "srv-1", web("cl-1")),
		)...)
	})

	f.run(t, "egress-type-only", func(t *testing.T) {
		// Ingress rules of a policy whose only type is Egress are ignored.
		np := netpol(f.ns("a"), "egress-type", egressOnly, "role", "client")
		np.Spec.Ingress = []networkingv1.NetworkPolicyIngressRule{from(nil, podPeer("role", "nobody"))}
		np.Spec.Egress = []networkingv1.NetworkPolicyEgressRule{to(nil, podPeer("role", "server"))}
		since := f.apply(t, np)
		await(t, since, "egress of cl-0 to the servers only; ingress to it unrestricted", join(
			f.allow(t, "cl-0", web("srv-0"), web("srv-1")),
			f.deny(t, "cl-0", web("cl-1"), web("out-0")),
			f.allow(t, "cl-1", web("cl-0")),
			f.allow(t, "out-0", web("cl-0")),
		)...)
	})
}

// fromNode checks that the node of a pod reaches it, three times in a row.
func (f *fixture) fromNode(t *testing.T, pod string) {
	t.Helper()
	p := f.pod(t, pod)
	n := framework.OpenNetns(t, f.c.NodeNetns(p.Spec.NodeName))
	addr := fmt.Sprintf("%s:%d", p.Status.PodIP, portWeb)
	for i := range 3 {
		got, err := framework.HTTPGet(n, addr, 2*time.Second)
		if err != nil || got != p.Name {
			t.Fatalf("node %s -> %s (%s), try %d: answer %q, %v", p.Spec.NodeName, p.Name, addr, i+1, got, err)
		}
	}
}

// staysReady checks for d that the pods stay Ready and do not restart.
func (f *fixture) staysReady(t *testing.T, d time.Duration, pods ...string) {
	t.Helper()
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(500 * time.Millisecond) {
		for _, short := range pods {
			p := f.pod(t, short)
			got, err := f.c.Kube.CoreV1().Pods(p.Namespace).Get(context.Background(), p.Name, metav1.GetOptions{})
			if err != nil {
				t.Fatalf("get pod %s: %v", p.Name, err)
			}
			if !framework.IsReady(got) {
				t.Fatalf("pod %s is no longer Ready: the kubelet's probes from its node do not pass", describe(got))
			}
			for _, cs := range got.Status.ContainerStatuses {
				if cs.RestartCount > 0 {
					t.Fatalf("pod %s restarted (%d): its liveness probe failed", describe(got), cs.RestartCount)
				}
			}
		}
	}
	t.Logf("%d pods stayed Ready for %s", len(pods), d)
}
