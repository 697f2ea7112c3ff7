package service

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/utils/ptr"

	"github.com/kuryr-k8s/kuryr/pkg/controller/kit/kittest"
	"github.com/kuryr-k8s/kuryr/pkg/controller/nested"
)

type modes map[string]string

func (m modes) Of(_ context.Context, node string) (string, error) {
	if mode, ok := m[node]; ok {
		return mode, nil
	}
	return "", errors.New("no such node")
}

func endpoint(pod, node string) discoveryv1.Endpoint {
	return discoveryv1.Endpoint{Addresses: []string{"10.0.0.1"}, NodeName: ptr.To(node),
		TargetRef: &corev1.ObjectReference{Kind: "Pod", Name: pod}}
}

// A Service restricting its sources warns about its endpoints on
// nested-macvlan nodes (there the Service's source group cannot apply),
// and only then.
func TestWarnUnfiltered(t *testing.T) {
	eps := []discoveryv1.EndpointSlice{{Endpoints: []discoveryv1.Endpoint{
		endpoint("on-hypervisor", "hv"), endpoint("on-macvlan", "vm1"), endpoint("on-vlan", "vm2"),
		endpoint("on-unreadable", "gone")}}}
	m := modes{"hv": nested.ModeNeutron, "vm1": nested.ModeMacvlan, "vm2": nested.ModeVLAN}
	lb := func(ranges ...string) *corev1.Service {
		return &corev1.Service{Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, LoadBalancerSourceRanges: ranges}}
	}
	cases := []struct {
		name string
		svc  *corev1.Service
		eps  []discoveryv1.EndpointSlice
		want string // the Warning's endpoints, "" for none
	}{
		{"restricted, an endpoint on a macvlan node", lb("172.24.4.0/24"), eps, "on-macvlan on vm1"},
		{"no source ranges: everyone is admitted anyway", lb(), eps, ""},
		{"not a LoadBalancer", &corev1.Service{Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP}}, eps, ""},
		{"no endpoint on a macvlan node", lb("172.24.4.0/24"), []discoveryv1.EndpointSlice{{Endpoints: eps[0].Endpoints[:1]}}, ""},
		{"another controller's class", func() *corev1.Service {
			s := lb("172.24.4.0/24")
			s.Spec.LoadBalancerClass = ptr.To("other")
			return s
		}(), eps, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rec := &kittest.Events{}
			r := &Reconciler{Recorder: rec, Modes: m}
			r.warnUnfiltered(context.Background(), c.svc, c.eps)
			notes := rec.Notes(ReasonSourceRangesNotEnforced)
			switch {
			case c.want == "" && len(notes) > 0:
				t.Errorf("Warning %q, want none", notes)
			case c.want != "" && (len(notes) != 1 || !strings.Contains(notes[0], "endpoints "+c.want+":")):
				t.Errorf("Warnings %q, want one naming %s", notes, c.want)
			}
		})
	}
}

func TestNamed(t *testing.T) {
	long := strings.Repeat("x", 250)
	var many []string
	for i := range 12 {
		many = append(many, fmt.Sprintf("%s-%d on node", long, i))
	}
	got := named(many)
	if len(got) > namedBytes+20 || !strings.HasSuffix(got, " and 10 more") {
		t.Errorf("named = %d bytes %q, want two names and 10 more", len(got), got)
	}
	if got := named([]string{"p0", "p1"}); got != "p0, p1" {
		t.Errorf("named = %q", got)
	}
	if got := named([]string{strings.Repeat("y", 700)}); len(got) > namedBytes+20 {
		t.Errorf("one long name: %d bytes", len(got))
	}
}
