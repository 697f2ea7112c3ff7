package service

import (
	"net/netip"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kuryr-k8s/kuryr/pkg/neutron"
)

func TestAdmits(t *testing.T) {
	external := []netip.Prefix{netip.MustParsePrefix("172.24.4.0/24")}
	in := func(prefix, group string) neutron.Rule {
		return neutron.Rule{Direction: "ingress", EtherType: "IPv4", RemotePrefix: prefix, RemoteGroup: group}
	}
	for _, tc := range []struct {
		name  string
		rules []neutron.Rule
		want  bool
	}{
		{"the local cloud's: cluster subnets only", []neutron.Rule{in("10.10.0.0/16", ""), in("10.96.0.0/16", ""),
			{Direction: "egress", EtherType: "IPv4"}}, false},
		{"open to everyone", []neutron.Rule{in("", "")}, true},
		{"a remote group only", []neutron.Rule{in("", "sg-1")}, false},
		{"a prefix covering the external network", []neutron.Rule{in("172.16.0.0/12", "")}, true},
		{"a host inside it", []neutron.Rule{in("172.24.4.7/32", "")}, true},
		{"a bad prefix is skipped", []neutron.Rule{in("nonsense", "")}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, got := admits(tc.rules, external); got != tc.want {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func TestAwaitSlices(t *testing.T) {
	now := time.Now()
	svc := func(age time.Duration, selector bool) *corev1.Service {
		s := &corev1.Service{ObjectMeta: metav1.ObjectMeta{CreationTimestamp: metav1.NewTime(now.Add(-age))}}
		if selector {
			s.Spec.Selector = map[string]string{"app": "web"}
		}
		return s
	}
	for _, tc := range []struct {
		name   string
		svc    *corev1.Service
		slices int
		wait   bool
	}{
		{"new, no slice yet: waits", svc(time.Second, true), 0, true},
		{"new, its slice there: goes", svc(time.Second, true), 1, false},
		{"no selector (user-managed slices): goes", svc(time.Second, false), 0, false},
		{"older than the grace: goes", svc(time.Minute, true), 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := awaitSlices(tc.svc, tc.slices, now) > 0; got != tc.wait {
				t.Fatalf("waits %v, want %v", got, tc.wait)
			}
		})
	}
}
