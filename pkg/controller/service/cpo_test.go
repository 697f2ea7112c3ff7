package service

import (
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	kuryrv1 "github.com/kuryr-k8s/kuryr/api/v1"
)

func TestExternalSpec(t *testing.T) {
	for _, tc := range []struct {
		name    string
		a       map[string]string
		want    *kuryrv1.ExternalSpec
		problem string
	}{
		{"none", map[string]string{"example.org/x": "y"}, nil, ""},
		{"internal", map[string]string{cpoInternal: "true"}, &kuryrv1.ExternalSpec{Internal: true}, ""},
		{"internal false", map[string]string{cpoInternal: "false"}, nil, ""},
		{"network and subnet", map[string]string{cpoFloatingNetwork: "net", cpoFloatingSubnet2: "sub"},
			&kuryrv1.ExternalSpec{FloatingNetworkID: "net", FloatingSubnetID: "sub"}, ""},
		{"subnet by name", map[string]string{cpoFloatingSubnet: " b "}, &kuryrv1.ExternalSpec{FloatingSubnet: "b"}, ""},
		{"subnet id wins", map[string]string{cpoFloatingSubnet: "b", cpoFloatingSubnet2: "sub"},
			&kuryrv1.ExternalSpec{FloatingSubnetID: "sub"}, "floating-subnet is ignored"},
		{"keep", map[string]string{cpoKeepFloatingIP: "1"}, &kuryrv1.ExternalSpec{KeepFloatingIP: true}, ""},
		{"bad flag", map[string]string{cpoKeepFloatingIP: "sure"}, nil, "is not true or false"},
		{"internal with a network", map[string]string{cpoInternal: "true", cpoFloatingNetwork: "net"},
			&kuryrv1.ExternalSpec{Internal: true}, "asks for no floating IP"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, problems := externalSpec(tc.a)
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("spec %+v, want %+v", got, tc.want)
			}
			p := strings.Join(problems, ";")
			if (tc.problem == "") != (p == "") || !strings.Contains(p, tc.problem) {
				t.Fatalf("problems %q, want containing %q", p, tc.problem)
			}
		})
	}
}

// Only a LoadBalancer Service whose external side kuryr serves gets the
// annotations in its spec.
func TestDesiredExternal(t *testing.T) {
	annotated := func(typ corev1.ServiceType, class *string) *corev1.Service {
		return svc(func(s *corev1.Service) {
			s.Spec.Type, s.Spec.LoadBalancerClass = typ, class
			s.Annotations = map[string]string{cpoFloatingNetwork: "net"}
		})
	}
	other := "other"
	for _, tc := range []struct {
		name string
		svc  *corev1.Service
		want bool
	}{
		{"LoadBalancer", annotated(corev1.ServiceTypeLoadBalancer, nil), true},
		{"ClusterIP", annotated(corev1.ServiceTypeClusterIP, nil), false},
		{"another class", annotated(corev1.ServiceTypeLoadBalancer, &other), false},
	} {
		spec, _ := Desired(tc.svc, nil, settings, nil)
		if got := spec.External != nil && spec.External.FloatingNetworkID == "net"; got != tc.want {
			t.Errorf("%s: external %+v, want set %v", tc.name, spec.External, tc.want)
		}
	}
}
