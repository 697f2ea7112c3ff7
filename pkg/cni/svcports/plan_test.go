package svcports

import (
	"net/netip"
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

const thisNode = "node-1"

func nodePortSvc(mut ...func(*corev1.Service)) corev1.Service {
	s := corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: "web"},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeNodePort, ClusterIP: "10.96.0.20",
			Ports: []corev1.ServicePort{{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80, NodePort: 30080}}}}
	for _, m := range mut {
		m(&s)
	}
	return s
}

func local(s *corev1.Service) {
	s.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyLocal
}

func loadBalancer(s *corev1.Service) { s.Spec.Type = corev1.ServiceTypeLoadBalancer }

type endpoint struct {
	ip, node                    string
	ready, serving, terminating *bool
}

var yes, no = ptr.To(true), ptr.To(false)

func epSlice(svc string, at discoveryv1.AddressType, port int32, eps ...endpoint) discoveryv1.EndpointSlice {
	es := discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: svc + "-x",
		Labels: map[string]string{discoveryv1.LabelServiceName: svc}}, AddressType: at,
		Ports: []discoveryv1.EndpointPort{{Name: ptr.To("http"), Protocol: ptr.To(corev1.ProtocolTCP), Port: ptr.To(port)}}}
	for _, e := range eps {
		es.Endpoints = append(es.Endpoints, discoveryv1.Endpoint{Addresses: []string{e.ip}, NodeName: ptr.To(e.node),
			Conditions: discoveryv1.EndpointConditions{Ready: e.ready, Serving: e.serving, Terminating: e.terminating}})
	}
	return es
}

func ap(s string) netip.AddrPort { return netip.MustParseAddrPort(s) }

func cluster(proto corev1.Protocol, port uint16, target string) NodePort {
	return NodePort{Service: "demo/web", Protocol: proto, Port: port, Target: ap(target)}
}

func localPort(eps ...string) NodePort {
	np := cluster(corev1.ProtocolTCP, 30080, "10.96.0.20:80")
	np.Local = true
	for _, e := range eps {
		np.Endpoints = append(np.Endpoints, ap(e))
	}
	return np
}

func TestDesired(t *testing.T) {
	v4 := discoveryv1.AddressTypeIPv4
	for _, tc := range []struct {
		name   string
		svcs   []corev1.Service
		eps    []discoveryv1.EndpointSlice
		ports  []NodePort
		health []HealthCheck
	}{
		{"cluster: to the ClusterIP", []corev1.Service{nodePortSvc()}, nil,
			[]NodePort{cluster(corev1.ProtocolTCP, 30080, "10.96.0.20:80")}, nil},
		{"local, no local endpoint: dropped", []corev1.Service{nodePortSvc(local)},
			[]discoveryv1.EndpointSlice{epSlice("web", v4, 8080, endpoint{ip: "10.10.0.5", node: "node-2", ready: yes})},
			[]NodePort{localPort()}, nil},
		{"local, one local endpoint", []corev1.Service{nodePortSvc(local)},
			[]discoveryv1.EndpointSlice{epSlice("web", v4, 8080, endpoint{ip: "10.10.0.5", node: "node-2", ready: yes},
				endpoint{ip: "10.10.0.6", node: thisNode, ready: yes})},
			[]NodePort{localPort("10.10.0.6:8080")}, nil},
		{"local, two local endpoints, unready and other slices' ignored", []corev1.Service{nodePortSvc(local)},
			[]discoveryv1.EndpointSlice{
				epSlice("web", v4, 8080, endpoint{ip: "10.10.0.9", node: thisNode}, endpoint{ip: "10.10.0.7", node: thisNode, ready: no}),
				epSlice("web", v4, 8080, endpoint{ip: "10.10.0.6", node: thisNode, ready: yes}),
				epSlice("other", v4, 9090, endpoint{ip: "10.10.0.8", node: thisNode, ready: yes})},
			[]NodePort{localPort("10.10.0.6:8080", "10.10.0.9:8080")}, nil},
		{"local, none ready: serving terminating ones", []corev1.Service{nodePortSvc(local)},
			[]discoveryv1.EndpointSlice{epSlice("web", v4, 8080,
				endpoint{ip: "10.10.0.6", node: thisNode, ready: no, serving: yes, terminating: yes},
				endpoint{ip: "10.10.0.7", node: thisNode, ready: no, serving: no, terminating: yes})},
			[]NodePort{localPort("10.10.0.6:8080")}, nil},
		{"load balancer with node ports", []corev1.Service{nodePortSvc(loadBalancer)}, nil,
			[]NodePort{cluster(corev1.ProtocolTCP, 30080, "10.96.0.20:80")}, nil},
		{"load balancer without node ports (allocateLoadBalancerNodePorts false)", []corev1.Service{nodePortSvc(loadBalancer,
			func(s *corev1.Service) {
				s.Spec.AllocateLoadBalancerNodePorts = ptr.To(false)
				s.Spec.Ports[0].NodePort = 0
			})}, nil, nil, nil},
		{"load balancer, local: health check port", []corev1.Service{nodePortSvc(loadBalancer, local,
			func(s *corev1.Service) { s.Spec.HealthCheckNodePort = 32000 })},
			[]discoveryv1.EndpointSlice{epSlice("web", v4, 8080, endpoint{ip: "10.10.0.6", node: thisNode, ready: yes},
				endpoint{ip: "10.10.0.7", node: thisNode, ready: no, serving: yes, terminating: yes},
				endpoint{ip: "10.10.0.5", node: "node-2", ready: yes})},
			[]NodePort{localPort("10.10.0.6:8080")},
			[]HealthCheck{{Port: 32000, Namespace: "demo", Name: "web", LocalEndpoints: 1}}},
		{"an address that is not one of this node's pods: left out", []corev1.Service{nodePortSvc(local)},
			[]discoveryv1.EndpointSlice{epSlice("web", v4, 8080, endpoint{ip: "10.10.0.6", node: thisNode, ready: yes},
				endpoint{ip: "169.254.169.254", node: thisNode, ready: yes})},
			[]NodePort{localPort("10.10.0.6:8080")}, nil},
		{"IPv6 ClusterIP, IPv6 endpoints only", []corev1.Service{nodePortSvc(local, func(s *corev1.Service) { s.Spec.ClusterIP = "fd00:96::20" })},
			[]discoveryv1.EndpointSlice{epSlice("web", v4, 8080, endpoint{ip: "10.10.0.6", node: thisNode, ready: yes}),
				epSlice("web", discoveryv1.AddressTypeIPv6, 8080, endpoint{ip: "fd00:10::6", node: thisNode, ready: yes})},
			[]NodePort{{Service: "demo/web", Protocol: corev1.ProtocolTCP, Port: 30080, Target: ap("[fd00:96::20]:80"),
				Local: true, Endpoints: []netip.AddrPort{ap("[fd00:10::6]:8080")}}}, nil},
		{"protocols, sorted; the default is TCP", []corev1.Service{nodePortSvc(func(s *corev1.Service) {
			s.Spec.Ports = []corev1.ServicePort{{Name: "dns", Protocol: corev1.ProtocolUDP, Port: 53, NodePort: 30053},
				{Name: "sctp", Protocol: corev1.ProtocolSCTP, Port: 9, NodePort: 30009},
				{Name: "http", Port: 80, NodePort: 30080}, {Name: "none", Port: 81}}
		})}, nil,
			[]NodePort{cluster(corev1.ProtocolSCTP, 30009, "10.96.0.20:9"), cluster(corev1.ProtocolTCP, 30080, "10.96.0.20:80"),
				cluster(corev1.ProtocolUDP, 30053, "10.96.0.20:53")}, nil},
		{"headless: nothing", []corev1.Service{nodePortSvc(func(s *corev1.Service) { s.Spec.ClusterIP = corev1.ClusterIPNone })}, nil, nil, nil},
		{"no ClusterIP yet: nothing", []corev1.Service{nodePortSvc(func(s *corev1.Service) { s.Spec.ClusterIP = "" })}, nil, nil, nil},
		{"type ClusterIP: nothing", []corev1.Service{nodePortSvc(func(s *corev1.Service) { s.Spec.Type = corev1.ServiceTypeClusterIP })}, nil, nil, nil},
		{"a node port claimed twice: the first Service by name", []corev1.Service{
			nodePortSvc(func(s *corev1.Service) { s.Name = "zz"; s.Spec.ClusterIP = "10.96.0.99" }), nodePortSvc()}, nil,
			[]NodePort{cluster(corev1.ProtocolTCP, 30080, "10.96.0.20:80")}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			trusted := func(ip netip.Addr) bool { return ip != netip.MustParseAddr("169.254.169.254") }
			got := Desired(thisNode, tc.svcs, tc.eps, trusted)
			if !reflect.DeepEqual(got.Ports, tc.ports) {
				t.Errorf("ports:\n got %+v\nwant %+v", got.Ports, tc.ports)
			}
			if !reflect.DeepEqual(got.Health, tc.health) {
				t.Errorf("health checks:\n got %+v\nwant %+v", got.Health, tc.health)
			}
		})
	}
}
