package service

import (
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	kuryrv1 "github.com/kuryr-k8s/kuryr/api/v1"
	"github.com/kuryr-k8s/kuryr/pkg/config"
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
		{"keep", map[string]string{cpoKeepFloatingIP: "true"}, &kuryrv1.ExternalSpec{KeepFloatingIP: true}, ""},
		// cloud-provider-openstack takes only "true" as true.
		{"flag not true", map[string]string{cpoInternal: "True"}, nil, "taken as false"},
		{"bad flag", map[string]string{cpoKeepFloatingIP: "1"}, nil, "is not true or false"},
		{"subnet pattern", map[string]string{cpoFloatingSubnet: "~pub.*"}, &kuryrv1.ExternalSpec{FloatingSubnet: "~pub.*"}, ""},
		{"bad subnet pattern", map[string]string{cpoFloatingSubnet: "~pub("}, &kuryrv1.ExternalSpec{FloatingSubnet: "~pub("},
			"no subnet matches it"},
		{"subnet tags", map[string]string{cpoFloatingTags: "&a, b"}, &kuryrv1.ExternalSpec{FloatingSubnetTags: "&a, b"}, ""},
		{"subnet id wins over tags", map[string]string{cpoFloatingTags: "a", cpoFloatingSubnet2: "sub"},
			&kuryrv1.ExternalSpec{FloatingSubnetID: "sub"}, "floating-subnet-tags is ignored"},
		{"internal with tags", map[string]string{cpoInternal: "true", cpoFloatingTags: "a"},
			&kuryrv1.ExternalSpec{Internal: true}, "asks for no floating IP"},
		{"internal with a network", map[string]string{cpoInternal: "true", cpoFloatingNetwork: "net"},
			&kuryrv1.ExternalSpec{Internal: true}, "asks for no floating IP"},
		// Classes, as cloud-provider-openstack applies them: what the class
		// names wins, what it does not name comes from the annotations.
		{"class", map[string]string{cpoClass: "internet"},
			&kuryrv1.ExternalSpec{FloatingNetworkID: "pub", FloatingSubnetID: "pub-v4"}, ""},
		{"class over annotations", map[string]string{cpoClass: "internet", cpoFloatingNetwork: "net", cpoFloatingTags: "a"},
			&kuryrv1.ExternalSpec{FloatingNetworkID: "pub", FloatingSubnetID: "pub-v4"}, "floating-network-id is ignored: class"},
		{"class with a subnet only", map[string]string{cpoClass: "office", cpoFloatingNetwork: "net", cpoFloatingSubnet2: "sub"},
			&kuryrv1.ExternalSpec{FloatingNetworkID: "net", FloatingSubnetTags: "&office"}, "floating-subnet-id is ignored: class"},
		{"class with a network only", map[string]string{cpoClass: "dmz", cpoFloatingSubnet: "dmz-*"},
			&kuryrv1.ExternalSpec{FloatingNetworkID: "dmz", FloatingSubnet: "dmz-*"}, ""},
		{"unknown class", map[string]string{cpoClass: "nope", cpoFloatingNetwork: "net"},
			&kuryrv1.ExternalSpec{UnknownClass: "nope"}, ""},
		{"class of an internal one", map[string]string{cpoClass: "internet", cpoInternal: "true"},
			&kuryrv1.ExternalSpec{Internal: true}, "class is ignored"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, problems := externalSpec(tc.a, classes)
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

var classes = map[string]config.LoadBalancerClass{
	"internet": {FloatingNetworkID: "pub", FloatingSubnetID: "pub-v4"},
	"office":   {FloatingSubnetTags: "&office"},
	"dmz":      {FloatingNetworkID: "dmz"},
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

// keep-floatingip outlives the type: a floating IP kuryr allocated while
// the Service was a LoadBalancer is kept when it turns ClusterIP.
func TestDesiredKeepAnyType(t *testing.T) {
	s := svc(func(s *corev1.Service) {
		s.Annotations = map[string]string{cpoKeepFloatingIP: "true", cpoFloatingNetwork: "net"}
	})
	spec, _ := Desired(s, nil, settings, nil)
	if spec.External == nil || !spec.External.KeepFloatingIP || spec.External.FloatingNetworkID != "" {
		t.Fatalf("external %+v, want keep-floatingip only", spec.External)
	}
}

func TestCPOWarnings(t *testing.T) {
	lb := func(ip string, a map[string]string) *corev1.Service {
		return svc(func(s *corev1.Service) {
			s.Spec.Type, s.Spec.LoadBalancerIP, s.Annotations = corev1.ServiceTypeLoadBalancer, ip, a
		})
	}
	for _, tc := range []struct {
		name string
		svc  *corev1.Service
		want string
	}{
		{"read", lb("", map[string]string{cpoFloatingNetwork: "net", cpoKeepFloatingIP: "true"}), ""},
		{"left by the provider", lb("", map[string]string{cpoPrefix + "load-balancer-id": "x"}), "stale now"},
		{"internal with an address", lb("172.24.4.9", map[string]string{cpoInternal: "true"}), "loadBalancerIP 172.24.4.9 is not served"},
		{"network with an address", lb("172.24.4.9", map[string]string{cpoFloatingNetwork: "net"}), "names the floating IP"},
		{"keep on a ClusterIP Service", svc(func(s *corev1.Service) { s.Annotations = map[string]string{cpoKeepFloatingIP: "true"} }), ""},
		{"a timeout", lb("", map[string]string{cpoPrefix + "timeout-client-data": "5000"}), "the ovn provider has no listener timeouts"},
		{"unknown class", lb("", map[string]string{cpoClass: "x"}), `kuryr.conf has no [LoadBalancerClass "x"] section; no floating IP is allocated or released`},
		{"unknown class with an address", lb("172.24.4.9", map[string]string{cpoClass: "x"}), "not needed: loadBalancerIP 172.24.4.9"},
		{"class overriding an annotation", lb("", map[string]string{cpoClass: "dmz", cpoFloatingNetwork: "net"}), "floating-network-id is ignored: class"},
		{"class on a ClusterIP Service", svc(func(s *corev1.Service) { s.Annotations = map[string]string{cpoClass: "x"} }), "are read on a LoadBalancer Service"},
	} {
		s := settings
		s.Classes = classes
		w := strings.Join(cpoWarnings(tc.svc, s), ";")
		if (tc.want == "") != (w == "") || !strings.Contains(w, tc.want) {
			t.Errorf("%s: warnings %q, want containing %q", tc.name, w, tc.want)
		}
		s.Provider = "amphora"
		if w := strings.Join(cpoWarnings(tc.svc, s), ";"); tc.name == "a timeout" && !strings.Contains(w, "the amphora provider's defaults apply") {
			t.Errorf("%s with amphora: warnings %q", tc.name, w)
		}
	}
}

func TestCheckClasses(t *testing.T) {
	if err := CheckClasses(classes); err != nil {
		t.Fatalf("good classes: %v", err)
	}
	err := CheckClasses(map[string]config.LoadBalancerClass{"ok": {FloatingSubnet: "pub-*"}, "bad": {FloatingSubnet: "~pub("}})
	if err == nil || !strings.Contains(err.Error(), `[LoadBalancerClass "bad"] floating-subnet: `) || strings.Contains(err.Error(), `"ok"`) {
		t.Fatalf("error %v, want one naming the bad class alone", err)
	}
}

// A class reaches the spec through Desired, and makes the Service's
// external side its own (no warning about external_svc_net).
func TestDesiredClass(t *testing.T) {
	s := settings
	s.Classes = classes
	for _, tc := range []struct {
		class string
		want  kuryrv1.ExternalSpec
		own   bool
	}{
		{"internet", kuryrv1.ExternalSpec{FloatingNetworkID: "pub", FloatingSubnetID: "pub-v4"}, true},
		{"office", kuryrv1.ExternalSpec{FloatingSubnetTags: "&office"}, false},
		{"nope", kuryrv1.ExternalSpec{UnknownClass: "nope"}, true},
	} {
		lb := svc(func(sv *corev1.Service) {
			sv.Spec.Type, sv.Annotations = corev1.ServiceTypeLoadBalancer, map[string]string{cpoClass: tc.class}
		})
		spec, _ := Desired(lb, nil, s, nil)
		if spec.External == nil || *spec.External != tc.want {
			t.Errorf("class %s: external %+v, want %+v", tc.class, spec.External, tc.want)
		}
		if got := ownExternal(lb.Annotations, s.Classes); got != tc.own {
			t.Errorf("class %s: own external side %v, want %v", tc.class, got, tc.own)
		}
	}
}
