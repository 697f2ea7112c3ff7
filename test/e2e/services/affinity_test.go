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
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	kuryrv1 "github.com/kuryr-k8s/kuryr/api/v1"
	"github.com/kuryr-k8s/kuryr/test/e2e/framework"
)

// TestSessionAffinity: a Service with sessionAffinity ClientIP on a TCP
// and a UDP port. Where the provider implements SOURCE_IP persistence
// (ovn-octavia-provider 8.0 on 2025.1), Octavia takes its timeout only on
// UDP and SCTP pools: the UDP port is sticky (20 requests from one client
// reach one backend, and once the client has been quiet for the timeout
// its next requests may reach another), the TCP port is not, and the
// status says Partial with a Warning naming the TCP port. (Where the
// provider does not implement it, ovn-octavia-provider before 5.0, the
// status is NotEnforced with a Warning: pkg/controller/loadbalancer/affinity_test.go.)
func TestSessionAffinity(t *testing.T) {
	c, k, ns := framework.Setup(t, "e2e-svcaffinity")
	backends := createBackends(t, c, ns, "sticky", 0, 3)
	cl := clientPod(t, c, ns, "client", c.Nodes[0])
	const timeout = 8
	s := webService(ns, "sticky", "sticky", corev1.ServicePort{Name: "http", Port: 80, TargetPort: intstr.FromString("web")},
		corev1.ServicePort{Name: "echo", Port: 9090, Protocol: corev1.ProtocolUDP, TargetPort: intstr.FromString("echo")})
	s.Spec.SessionAffinity = corev1.ServiceAffinityClientIP
	s.Spec.SessionAffinityConfig = &corev1.SessionAffinityConfig{ClientIP: &corev1.ClientIPConfig{TimeoutSeconds: ptr.To[int32](timeout)}}
	svc := createService(t, c, s)
	klb := waitKLB(t, k, ns, "sticky", 6, 3*time.Minute)
	tcp, udp := httpCmd(svc.Spec.ClusterIP, 80), "testapp udp-ask "+svc.Spec.ClusterIP+":9090 1"

	if st := klb.Status.SessionAffinity; st != kuryrv1.AffinityPartial {
		t.Fatalf("status.sessionAffinity %q, want Partial (UDP only)", st)
	}
	if w := warnings(t, c, ns, "sticky", "NotEnforced"); !strings.Contains(w, "not on 80/TCP") {
		t.Fatalf("no Warning naming the TCP port (Warnings: %q)", w)
	}
	reachesAll(t, cl, tcp, podNames(backends), time.Minute)
	first := answers(t, cl, udp, 20)
	if len(first) != 1 {
		t.Fatalf("20 UDP requests from one client reached %v, want one backend", first)
	}
	// Quiet for longer than the timeout, the client may be sent anywhere
	// (each round sticks again): within a few rounds it reaches another.
	seen := first[0]
	for round := 1; ; round++ {
		time.Sleep((timeout + 2) * time.Second)
		got := answers(t, cl, udp, 20)
		if len(got) != 1 {
			t.Fatalf("round %d: 20 UDP requests reached %v, want one backend", round, got)
		}
		if got[0] != seen {
			t.Logf("TCP spread over all backends; 20 UDP requests stuck to %s; after %d s quiet, %d round(s) later, to %s",
				seen, timeout+2, round, got[0])
			break
		}
		if round == 8 {
			t.Fatalf("after %d rounds of %d s quiet the client still reaches only %s: the affinity does not expire", round, timeout+2, seen)
		}
	}
}

// warnings are the notes of the Warning Events of reason about a Service.
func warnings(t *testing.T, c *framework.Cloud, ns, name, reason string) string {
	t.Helper()
	var notes []string
	framework.Eventually(t, 30*time.Second, time.Second, fmt.Sprintf("a %s Warning on Service %s", reason, name), func() (bool, error) {
		evs, err := c.Kube.EventsV1().Events(ns).List(context.Background(), metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		notes = notes[:0]
		for _, e := range evs.Items {
			if e.Regarding.Kind == "Service" && e.Regarding.Name == name && e.Reason == reason && e.Type == corev1.EventTypeWarning {
				notes = append(notes, e.Note)
			}
		}
		return len(notes) > 0, nil
	})
	return strings.Join(notes, "; ")
}
