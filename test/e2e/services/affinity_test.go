//go:build e2e

package services

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	kuryrv1 "github.com/kuryr-k8s/kuryr/api/v1"
	"github.com/kuryr-k8s/kuryr/test/e2e/framework"
)

// TestSessionAffinity: a Service with sessionAffinity ClientIP. Where the
// provider implements SOURCE_IP persistence (ovn-octavia-provider 8.0 on
// 2025.1), 20 connections from one client reach one backend, and once
// the client has been quiet for the timeout its next connections may
// reach another; where it does not (3.0 on zed), the Service gets a
// NotEnforced Warning saying so, and connections spread over the
// backends as without affinity: the status tells the truth either way.
func TestSessionAffinity(t *testing.T) {
	c, k, ns := framework.Setup(t, "e2e-svcaffinity")
	backends := createBackends(t, c, ns, "sticky", 0, 3)
	cl := clientPod(t, c, ns, "client", c.Nodes[0])
	const timeout = 8
	s := webService(ns, "sticky", "sticky")
	s.Spec.SessionAffinity = corev1.ServiceAffinityClientIP
	s.Spec.SessionAffinityConfig = &corev1.SessionAffinityConfig{ClientIP: &corev1.ClientIPConfig{TimeoutSeconds: ptr.To[int32](timeout)}}
	svc := createService(t, c, s)
	klb := waitKLB(t, k, ns, "sticky", 3, 3*time.Minute)
	cmd := httpCmd(svc.Spec.ClusterIP, 80)

	wantEnforced := os.Getenv("KURYR_CLOUD_RELEASE") != "zed"
	if got := klb.Status.SessionAffinity == kuryrv1.AffinityEnforced; got != wantEnforced {
		t.Fatalf("status.sessionAffinity %q on %s, want enforced: %v", klb.Status.SessionAffinity, os.Getenv("KURYR_CLOUD_RELEASE"), wantEnforced)
	}
	if !wantEnforced {
		if w := warnings(t, c, ns, "sticky", "NotEnforced"); !strings.Contains(w, "sessionAffinity ClientIP is not enforced") {
			t.Fatalf("no NotEnforced Warning for the affinity (Warnings: %q)", w)
		}
		reachesAll(t, cl, cmd, podNames(backends), time.Minute)
		t.Logf("affinity not enforced by the provider: Warning given, connections reach all %d backends", len(backends))
		return
	}
	first := answers(t, cl, cmd, 20)
	if len(first) != 1 {
		t.Fatalf("20 connections from one client reached %v, want one backend", first)
	}
	// Quiet for longer than the timeout, the client may be sent anywhere
	// (each round sticks again): within a few rounds it reaches another.
	seen := first[0]
	for round := 1; ; round++ {
		time.Sleep((timeout + 2) * time.Second)
		got := answers(t, cl, cmd, 20)
		if len(got) != 1 {
			t.Fatalf("round %d: 20 connections reached %v, want one backend", round, got)
		}
		if got[0] != seen {
			t.Logf("20 connections stuck to %s; after %d s quiet, %d round(s) later, to %s", seen, timeout+2, round, got[0])
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
