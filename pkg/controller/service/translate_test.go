package service

import (
	"net/netip"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	kuryrv1 "github.com/kuryr-k8s/kuryr/api/v1"
)

var settings = Settings{Provider: "ovn", Algorithm: "SOURCE_IP_PORT", SubnetID: "svc-subnet", ProjectID: "p", Class: "kuryr", ExternalIPs: true}

func podSubnet(ip netip.Addr) string {
	if netip.MustParsePrefix("10.10.0.0/16").Contains(ip) {
		return "pod-subnet"
	}
	return ""
}

func svc(mut func(*corev1.Service)) *corev1.Service {
	s := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: "web"},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, ClusterIP: "10.96.0.20",
			Ports: []corev1.ServicePort{{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80, TargetPort: intstr.FromString("web")}}}}
	if mut != nil {
		mut(s)
	}
	return s
}

type ep struct {
	ip                          string
	ready, serving, terminating *bool
}

func slice(ports map[string]int32, proto corev1.Protocol, eps ...ep) discoveryv1.EndpointSlice {
	es := discoveryv1.EndpointSlice{AddressType: discoveryv1.AddressTypeIPv4}
	for name, p := range ports {
		es.Ports = append(es.Ports, discoveryv1.EndpointPort{Name: ptr.To(name), Protocol: ptr.To(proto), Port: ptr.To(p)})
	}
	for _, e := range eps {
		es.Endpoints = append(es.Endpoints, discoveryv1.Endpoint{Addresses: []string{e.ip},
			Conditions: discoveryv1.EndpointConditions{Ready: e.ready, Serving: e.serving, Terminating: e.terminating},
			TargetRef:  &corev1.ObjectReference{Kind: "Pod", Namespace: "demo", Name: "pod-" + e.ip}})
	}
	return es
}

var yes, no = ptr.To(true), ptr.To(false)

func member(ip string, port int32) kuryrv1.LoadBalancerMember {
	return kuryrv1.LoadBalancerMember{IP: ip, Port: port, SubnetID: podSubnet(netip.MustParseAddr(ip)), TargetRef: "demo/pod-" + ip}
}

func TestSkip(t *testing.T) {
	for _, tc := range []struct {
		name string
		svc  *corev1.Service
		skip string
	}{
		{"clusterIP", svc(nil), ""},
		{"headless", svc(func(s *corev1.Service) { s.Spec.ClusterIP = "None" }), "headless"},
		{"externalName", svc(func(s *corev1.Service) { s.Spec.Type = corev1.ServiceTypeExternalName; s.Spec.ClusterIP = "" }), "ExternalName"},
		{"our class", svc(func(s *corev1.Service) { s.Spec.LoadBalancerClass = ptr.To("kuryr") }), ""},
		{"no IP yet", svc(func(s *corev1.Service) { s.Spec.ClusterIP = "" }), "no ClusterIP"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Skip(tc.svc, "kuryr")
			if (tc.skip == "") != (got == "") || !strings.Contains(got, tc.skip) {
				t.Fatalf("Skip = %q, want containing %q", got, tc.skip)
			}
		})
	}
}

func TestDesired(t *testing.T) {
	dns := func(s *corev1.Service) {
		s.Spec.Ports = []corev1.ServicePort{
			{Name: "dns-tcp", Protocol: corev1.ProtocolTCP, Port: 53, TargetPort: intstr.FromInt32(53)},
			{Name: "dns", Protocol: corev1.ProtocolUDP, Port: 53, TargetPort: intstr.FromInt32(53)},
		}
	}
	for _, tc := range []struct {
		name  string
		svc   *corev1.Service
		eps   []discoveryv1.EndpointSlice
		ports []kuryrv1.LoadBalancerPort
	}{
		{"named target port resolved, ready endpoints only", svc(nil),
			[]discoveryv1.EndpointSlice{slice(map[string]int32{"http": 8080}, corev1.ProtocolTCP,
				ep{ip: "10.10.0.5", ready: yes}, ep{ip: "10.10.0.4"}, ep{ip: "10.10.0.6", ready: no})},
			[]kuryrv1.LoadBalancerPort{{Name: "http", Protocol: "TCP", Port: 80, TargetPort: "web",
				Members: []kuryrv1.LoadBalancerMember{member("10.10.0.4", 8080), member("10.10.0.5", 8080)}}}},
		{"no endpoints: a port without members", svc(nil), nil,
			[]kuryrv1.LoadBalancerPort{{Name: "http", Protocol: "TCP", Port: 80, TargetPort: "web"}}},
		{"none ready: serving terminating ones", svc(nil),
			[]discoveryv1.EndpointSlice{slice(map[string]int32{"http": 8080}, corev1.ProtocolTCP,
				ep{ip: "10.10.0.5", ready: no, serving: yes, terminating: yes}, ep{ip: "10.10.0.6", ready: no, serving: no, terminating: yes})},
			[]kuryrv1.LoadBalancerPort{{Name: "http", Protocol: "TCP", Port: 80, TargetPort: "web",
				Members: []kuryrv1.LoadBalancerMember{member("10.10.0.5", 8080)}}}},
		{"publishNotReadyAddresses: all", svc(func(s *corev1.Service) { s.Spec.PublishNotReadyAddresses = true }),
			[]discoveryv1.EndpointSlice{slice(map[string]int32{"http": 8080}, corev1.ProtocolTCP,
				ep{ip: "10.10.0.5", ready: yes}, ep{ip: "10.10.0.6", ready: no})},
			[]kuryrv1.LoadBalancerPort{{Name: "http", Protocol: "TCP", Port: 80, TargetPort: "web",
				Members: []kuryrv1.LoadBalancerMember{member("10.10.0.5", 8080), member("10.10.0.6", 8080)}}}},
		{"same port on two protocols (DNS)", svc(dns),
			[]discoveryv1.EndpointSlice{slice(map[string]int32{"dns-tcp": 53}, corev1.ProtocolTCP, ep{ip: "10.10.0.7", ready: yes}),
				slice(map[string]int32{"dns": 53}, corev1.ProtocolUDP, ep{ip: "10.10.0.7", ready: yes})},
			[]kuryrv1.LoadBalancerPort{
				{Name: "dns-tcp", Protocol: "TCP", Port: 53, TargetPort: "53", Members: []kuryrv1.LoadBalancerMember{member("10.10.0.7", 53)}},
				{Name: "dns", Protocol: "UDP", Port: 53, TargetPort: "53", Members: []kuryrv1.LoadBalancerMember{member("10.10.0.7", 53)}}}},
		{"endpoints in two slices, duplicates once", svc(nil),
			[]discoveryv1.EndpointSlice{slice(map[string]int32{"http": 8080}, corev1.ProtocolTCP, ep{ip: "10.10.0.9", ready: yes}),
				slice(map[string]int32{"http": 8080}, corev1.ProtocolTCP, ep{ip: "10.10.0.10", ready: yes}, ep{ip: "10.10.0.9", ready: yes})},
			[]kuryrv1.LoadBalancerPort{{Name: "http", Protocol: "TCP", Port: 80, TargetPort: "web",
				Members: []kuryrv1.LoadBalancerMember{member("10.10.0.9", 8080), member("10.10.0.10", 8080)}}}},
		{"selector-less, address outside the pod subnets", svc(nil),
			[]discoveryv1.EndpointSlice{func() discoveryv1.EndpointSlice {
				es := slice(map[string]int32{"http": 6443}, corev1.ProtocolTCP, ep{ip: "172.24.4.1", ready: yes})
				es.Endpoints[0].TargetRef = nil
				return es
			}()},
			[]kuryrv1.LoadBalancerPort{{Name: "http", Protocol: "TCP", Port: 80, TargetPort: "web",
				Members: []kuryrv1.LoadBalancerMember{{IP: "172.24.4.1", Port: 6443}}}}},
		{"other port name ignored", svc(nil),
			[]discoveryv1.EndpointSlice{slice(map[string]int32{"metrics": 9090}, corev1.ProtocolTCP, ep{ip: "10.10.0.5", ready: yes})},
			[]kuryrv1.LoadBalancerPort{{Name: "http", Protocol: "TCP", Port: 80, TargetPort: "web"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, _ := Desired(tc.svc, tc.eps, settings, podSubnet)
			if got.IP != "10.96.0.20" || got.SubnetID != "svc-subnet" || got.Algorithm != "SOURCE_IP_PORT" || got.Type != "ClusterIP" {
				t.Fatalf("spec header = %+v", got)
			}
			if !reflect.DeepEqual(got.Ports, tc.ports) {
				t.Fatalf("ports:\n got %+v\nwant %+v", got.Ports, tc.ports)
			}
		})
	}
}

func TestDesiredLoadBalancer(t *testing.T) {
	lb := func(s *corev1.Service) {
		s.Spec.Type = corev1.ServiceTypeLoadBalancer
		s.Spec.LoadBalancerIP = "172.24.4.50"
		s.Spec.LoadBalancerSourceRanges = []string{"172.24.4.0/28", "10.0.0.0/8"}
	}
	got, _ := Desired(svc(lb), nil, settings, podSubnet)
	if got.Type != "LoadBalancer" || got.LoadBalancerIP != "172.24.4.50" ||
		!reflect.DeepEqual(got.SourceRanges, []string{"10.0.0.0/8", "172.24.4.0/28"}) {
		t.Fatalf("spec = %+v", got)
	}
	// Another controller's class: kuryr still serves the ClusterIP only.
	foreign, _ := Desired(svc(func(s *corev1.Service) { lb(s); s.Spec.LoadBalancerClass = ptr.To("metallb") }), nil, settings, podSubnet)
	if foreign.Type != "ClusterIP" || foreign.LoadBalancerIP != "" || len(foreign.SourceRanges) != 0 {
		t.Fatalf("foreign class spec = %+v", foreign)
	}
}

func TestDesiredAffinity(t *testing.T) {
	for _, tc := range []struct {
		name string
		mut  func(*corev1.Service)
		want int32
	}{
		{"none", nil, 0},
		{"ClientIP, the API server's default timeout", func(s *corev1.Service) {
			s.Spec.SessionAffinity = corev1.ServiceAffinityClientIP
		}, 10800},
		{"ClientIP with a timeout", func(s *corev1.Service) {
			s.Spec.SessionAffinity = corev1.ServiceAffinityClientIP
			s.Spec.SessionAffinityConfig = &corev1.SessionAffinityConfig{ClientIP: &corev1.ClientIPConfig{TimeoutSeconds: ptr.To[int32](30)}}
		}, 30},
		{"a timeout without ClientIP", func(s *corev1.Service) {
			s.Spec.SessionAffinityConfig = &corev1.SessionAffinityConfig{ClientIP: &corev1.ClientIPConfig{TimeoutSeconds: ptr.To[int32](30)}}
		}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, _ := Desired(svc(tc.mut), nil, settings, podSubnet)
			if got.AffinityTimeoutSeconds != tc.want {
				t.Fatalf("affinityTimeoutSeconds = %d, want %d", got.AffinityTimeoutSeconds, tc.want)
			}
		})
	}
}

func TestMembersWithoutSubnet(t *testing.T) {
	eps := []discoveryv1.EndpointSlice{slice(map[string]int32{"http": 8080}, corev1.ProtocolTCP,
		ep{ip: "10.10.0.5", ready: yes}, ep{ip: "192.168.1.9", ready: yes})}
	strict := settings
	strict.RequireSubnet = true
	got, unplaced := Desired(svc(nil), eps, strict, podSubnet)
	if len(got.Ports[0].Members) != 1 || got.Ports[0].Members[0].IP != "10.10.0.5" || !reflect.DeepEqual(unplaced, []string{"192.168.1.9"}) {
		t.Fatalf("members %+v, unplaced %v", got.Ports[0].Members, unplaced)
	}
	lax, unplaced := Desired(svc(nil), eps, settings, podSubnet)
	if len(lax.Ports[0].Members) != 2 || len(unplaced) != 0 {
		t.Fatalf("without RequireSubnet: members %+v, unplaced %v", lax.Ports[0].Members, unplaced)
	}
}

func TestWarnings(t *testing.T) {
	nodePort := func(s *corev1.Service) { s.Spec.Type = corev1.ServiceTypeNodePort; s.Spec.Ports[0].NodePort = 30080 }
	lb := func(s *corev1.Service) {
		s.Spec.Type = corev1.ServiceTypeLoadBalancer
		s.Spec.Ports[0].NodePort = 30080
	}
	etpLocal := func(s *corev1.Service) { s.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyLocal }
	both := func(ms ...func(*corev1.Service)) func(*corev1.Service) {
		return func(s *corev1.Service) {
			for _, m := range ms {
				m(s)
			}
		}
	}
	for _, tc := range []struct {
		name      string
		nodePorts bool // [kubernetes] serve_node_ports
		mut       func(*corev1.Service)
		want      string // "": no warning
	}{
		{"plain", true, nil, ""},
		{"nodePort served", true, nodePort, ""},
		{"nodePort not served", false, nodePort, "node ports are not served"},
		// Whether the provider enforces it is the load balancer
		// reconciler's to find out and say.
		{"affinity", true, func(s *corev1.Service) { s.Spec.SessionAffinity = corev1.ServiceAffinityClientIP }, ""},
		{"etp local, node port", true, both(nodePort, etpLocal), "node ports send only to the node's own endpoints but masquerade (client addresses are not preserved on node ports)"},
		{"etp local, load balancer", true, both(lb, etpLocal), "client addresses are not preserved on node ports); the load balancer's floating IP reaches the endpoints on every node directly, with client addresses preserved"},
		{"etp local, load balancer without node ports", true, both(lb, etpLocal, func(s *corev1.Service) { s.Spec.Ports[0].NodePort = 0 }),
			"externalTrafficPolicy Local is not enforced: the load balancer's floating IP"},
		{"etp local, load balancer, node ports not served", false, both(lb, etpLocal), "externalTrafficPolicy Local is not enforced: the load balancer's floating IP"},
		{"itp local", true, func(s *corev1.Service) {
			s.Spec.InternalTrafficPolicy = ptr.To(corev1.ServiceInternalTrafficPolicyLocal)
		}, "internalTrafficPolicy Local is not enforced: pod-to-Service traffic goes through the Octavia load balancer"},
		{"external IPs, not served", true, func(s *corev1.Service) {
			s.Spec.ExternalIPs = []string{"1.2.3.4"}
			s.Annotations = map[string]string{"off": "yes"}
		}, "serve_external_ips is false"},
		{"external IPs of a LoadBalancer", true, func(s *corev1.Service) {
			s.Spec.Type = corev1.ServiceTypeLoadBalancer
			s.Spec.ExternalIPs = []string{"1.2.3.4"}
		}, "externalIPs"},
		{"cloud-provider-openstack's annotations on a ClusterIP Service", true, func(s *corev1.Service) {
			s.Annotations = map[string]string{"service.beta.kubernetes.io/openstack-internal-load-balancer": "true",
				"loadbalancer.openstack.org/keep-floatingip": "true", "example.org/other": "x"}
		}, "annotations service.beta.kubernetes.io/openstack-internal-load-balancer are read on a LoadBalancer Service"},
		{"cloud-provider-openstack's annotations read", true, func(s *corev1.Service) {
			s.Spec.Type = corev1.ServiceTypeLoadBalancer
			s.Annotations = map[string]string{"loadbalancer.openstack.org/floating-network-id": "ext",
				"loadbalancer.openstack.org/keep-floatingip": "true"}
		}, ""},
		{"cloud-provider-openstack's timeouts", true, func(s *corev1.Service) {
			s.Spec.Type = corev1.ServiceTypeLoadBalancer
			s.Annotations = map[string]string{"loadbalancer.openstack.org/timeout-client-data": "5000"}
		}, "annotation loadbalancer.openstack.org/timeout-client-data is not read: the ovn provider has no listener timeouts"},
		{"cloud-provider-openstack's bad flag", true, func(s *corev1.Service) {
			s.Spec.Type = corev1.ServiceTypeLoadBalancer
			s.Annotations = map[string]string{"loadbalancer.openstack.org/keep-floatingip": "yes please"}
		}, `loadbalancer.openstack.org/keep-floatingip: "yes please" is not true or false (taken as false`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := settings
			s.NodePorts = tc.nodePorts
			if svc(tc.mut).Annotations["off"] == "yes" {
				s.ExternalIPs = false
			}
			w := strings.Join(Warnings(svc(tc.mut), s), ";")
			if (tc.want == "") != (w == "") || !strings.Contains(w, tc.want) {
				t.Fatalf("warnings %q, want containing %q", w, tc.want)
			}
		})
	}
}
