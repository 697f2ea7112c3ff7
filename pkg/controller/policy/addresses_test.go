package policy

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestPeerAddresses(t *testing.T) {
	pod := func(ns string, labels map[string]string, phase corev1.PodPhase, host bool, ips ...string) corev1.Pod {
		p := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Labels: labels},
			Spec: corev1.PodSpec{HostNetwork: host}, Status: corev1.PodStatus{Phase: phase}}
		for _, ip := range ips {
			p.Status.PodIPs = append(p.Status.PodIPs, corev1.PodIP{IP: ip})
		}
		return p
	}
	web := map[string]string{"app": "web"}
	v := PodsView{Pods: []corev1.Pod{
		pod("shop", web, corev1.PodRunning, false, "10.10.0.5", "fd00::5"),
		pod("shop", web, corev1.PodRunning, false, "10.10.0.5"), // the same address twice: once
		pod("shop", web, corev1.PodSucceeded, false, "10.10.0.6"),
		pod("shop", web, corev1.PodRunning, true, "10.11.0.2"),
		pod("shop", map[string]string{"app": "db"}, corev1.PodRunning, false, "10.10.0.7"),
		pod("blog", web, corev1.PodRunning, false, "10.10.1.8"),
	}, NamespaceLabels: map[string]map[string]string{"blog": {"team": "b"}}}
	got := PeerAddresses(Peer{Namespace: "shop", Pods: &metav1.LabelSelector{MatchLabels: web}}, v)
	if want := []string{"10.10.0.5/32", "fd00::5/128"}; !reflect.DeepEqual(got, want) {
		t.Errorf("own namespace: %v, want %v", got, want)
	}
	got = PeerAddresses(Peer{Namespaces: &metav1.LabelSelector{MatchLabels: map[string]string{"team": "b"}}}, v)
	if want := []string{"10.10.1.8/32"}; !reflect.DeepEqual(got, want) {
		t.Errorf("by namespace labels: %v, want %v", got, want)
	}
	add, remove := AddressDiff([]string{"a", "b"}, []string{"b", "c"})
	if !reflect.DeepEqual(add, []string{"a"}) || !reflect.DeepEqual(remove, []string{"c"}) {
		t.Errorf("diff: add %v remove %v", add, remove)
	}
}
