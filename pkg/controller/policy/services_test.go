package policy

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kuryrv1 "github.com/kuryr-k8s/kuryr/api/v1"
)

func TestServiceRules(t *testing.T) {
	web := &Peer{Namespace: "shop", Pods: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}}
	pod := func(name, app, ip string) corev1.Pod {
		return corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name, Labels: map[string]string{"app": app}},
			Status: corev1.PodStatus{PodIPs: []corev1.PodIP{{IP: ip}}}}
	}
	view := PodsView{Pods: []corev1.Pod{pod("web-1", "web", "10.10.0.9"), pod("db-1", "db", "10.10.0.8")}}
	klbIn := func(ns, ip string, ports ...kuryrv1.LoadBalancerPort) kuryrv1.KuryrLoadBalancer {
		k := kuryrv1.KuryrLoadBalancer{Spec: kuryrv1.KuryrLoadBalancerSpec{IP: ip, Ports: ports}}
		k.Namespace = ns
		return k
	}
	klb := func(ip string, ports ...kuryrv1.LoadBalancerPort) kuryrv1.KuryrLoadBalancer {
		return klbIn("shop", ip, ports...)
	}
	portAt := func(proto string, port, target int32, ref, ip string) kuryrv1.LoadBalancerPort {
		return kuryrv1.LoadBalancerPort{Protocol: proto, Port: port,
			Members: []kuryrv1.LoadBalancerMember{{IP: ip, Port: target, TargetRef: ref}}}
	}
	port := func(proto string, port, target int32, ref string) kuryrv1.LoadBalancerPort {
		ip := "10.10.0.9"
		if ref == "shop/db-1" {
			ip = "10.10.0.8"
		}
		return portAt(proto, port, target, ref, ip)
	}
	klbs := []kuryrv1.KuryrLoadBalancer{
		klb("10.96.0.20", port("TCP", 80, 8080, "shop/web-1"), port("TCP", 443, 8443, "shop/web-1"), port("UDP", 53, 53, "shop/web-1")),
		klb("10.96.0.21", port("TCP", 5432, 5432, "shop/db-1")),
		klb("", port("TCP", 80, 8080, "shop/web-1")), // headless: no VIP
		// Selector-less Services whose user-written EndpointSlices name
		// web-1 but are not it: another namespace's Service, and an
		// address that is not web-1's.
		klbIn("other", "10.96.0.30", port("TCP", 80, 8080, "shop/web-1")),
		klb("10.96.0.31", portAt("TCP", 80, 8080, "shop/web-1", "192.0.2.7")),
	}
	vip := func(proto string, p int) kuryrv1.PolicyRule {
		return kuryrv1.PolicyRule{Direction: Egress, Protocol: proto, PortMin: p, PortMax: p, CIDR: "10.96.0.20/32"}
	}
	for _, tc := range []struct {
		name string
		rule Rule
		want []kuryrv1.PolicyRule
	}{
		{"target port allowed: the Service port at the VIP", Rule{Direction: Egress, Protocol: "tcp", PortMin: 8080, PortMax: 8080, Peer: web},
			[]kuryrv1.PolicyRule{vip("tcp", 80)}},
		{"a range covering both target ports", Rule{Direction: Egress, Protocol: "tcp", PortMin: 8000, PortMax: 9000, Peer: web},
			[]kuryrv1.PolicyRule{vip("tcp", 443), vip("tcp", 80)}},
		{"every port and protocol", Rule{Direction: Egress, Peer: web},
			[]kuryrv1.PolicyRule{vip("tcp", 443), vip("tcp", 80), vip("udp", 53)}},
		{"another protocol", Rule{Direction: Egress, Protocol: "sctp", Peer: web}, nil},
		{"a port no member serves", Rule{Direction: Egress, Protocol: "tcp", PortMin: 9090, PortMax: 9090, Peer: web}, nil},
		{"ingress rules need none", Rule{Direction: Ingress, Protocol: "tcp", PortMin: 8080, PortMax: 8080, Peer: web}, nil},
		{"CIDR rules are left as written", Rule{Direction: Egress, CIDR: "10.10.0.0/16"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := ServiceRules(Desired{Egress: true, Rules: []Rule{tc.rule}}, klbs, view)
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %+v\nwant %+v", got, tc.want)
			}
		})
	}
}
