package policy

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func TestSpecAndNamedPorts(t *testing.T) {
	web := map[string]string{"app": "web"}
	pod := func(ns, name string, labels map[string]string, ports ...corev1.ContainerPort) corev1.Pod {
		return corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Ports: ports}}}}
	}
	http := intstr.FromString("http")
	np := &networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "p"},
		Spec: networkingv1.NetworkPolicySpec{PodSelector: metav1.LabelSelector{MatchLabels: web},
			Ingress: []networkingv1.NetworkPolicyIngressRule{{
				From:  []networkingv1.NetworkPolicyPeer{{PodSelector: &metav1.LabelSelector{}}, {PodSelector: &metav1.LabelSelector{}}},
				Ports: []networkingv1.NetworkPolicyPort{{Port: &http}}}}}}
	view := PodsView{Pods: []corev1.Pod{
		pod("shop", "a", web, corev1.ContainerPort{Name: "http", ContainerPort: 8080}),
		pod("shop", "b", web, corev1.ContainerPort{Name: "http", ContainerPort: 8080}, corev1.ContainerPort{Name: "dns", ContainerPort: 53, Protocol: corev1.ProtocolUDP}),
		pod("shop", "c", map[string]string{"app": "db"}, corev1.ContainerPort{Name: "http", ContainerPort: 9999}), // not selected
		pod("blog", "d", web, corev1.ContainerPort{Name: "http", ContainerPort: 7777}),                            // other namespace
	}}
	d := Translate(np, NamedPortsIn(np, view))
	spec := SpecOf(np, d)
	if len(spec.Rules) != 1 || spec.Rules[0].PortMin != 8080 || spec.Rules[0].Protocol != "tcp" {
		t.Fatalf("rules %+v, want one tcp 8080 rule (the selected pods' http)", spec.Rules)
	}
	if len(spec.Peers) != 1 || spec.Rules[0].Peer != spec.Peers[0].Key || spec.Peers[0].Namespace != "shop" {
		t.Fatalf("peers %+v: the two equal peers are one address group in the policy's namespace", spec.Peers)
	}
	if !spec.Ingress || spec.Egress {
		t.Errorf("directions %v %v", spec.Ingress, spec.Egress)
	}
}
