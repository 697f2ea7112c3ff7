//go:build e2e && destructive

package uninstall

import (
	"context"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/containernetworking/plugins/pkg/ns"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/kuryr-k8s/kuryr/test/e2e/framework"
)

// web is what the upgrade and the migration keep serving: two servers
// (app=web) behind a Service "web" on port 80, a client (role=client) a
// NetworkPolicy "web" admits to them, and another pod it does not.
type web struct {
	servers         []*corev1.Pod
	svc             *corev1.Service
	vip             string // the ClusterIP and port
	allowed, denied ns.NetNS
}

func newWeb(t *testing.T, c *framework.Cloud, k *framework.Kuryr, namespace string, typ corev1.ServiceType) *web {
	t.Helper()
	ctx := context.Background()
	servers := createLabelled(t, c, namespace, "web", map[string]string{"app": "web"}, 2)
	client := createLabelled(t, c, namespace, "client", map[string]string{"role": "client"}, 1)[0]
	other := createLabelled(t, c, namespace, "other", map[string]string{"role": "other"}, 1)[0]
	pods := c.WaitReady(t, append(append(servers, client), other), 3*time.Minute)
	svc, err := c.Kube.CoreV1().Services(namespace).Create(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "web"},
		Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "web"}, Type: typ,
			Ports: []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromInt32(8080)}}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	np := &networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "web"},
		Spec: networkingv1.NetworkPolicySpec{PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Ingress: []networkingv1.NetworkPolicyIngressRule{{From: []networkingv1.NetworkPolicyPeer{{
				PodSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"role": "client"}}}}}}}}
	if _, err := c.Kube.NetworkingV1().NetworkPolicies(namespace).Create(ctx, np, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	k.WaitPolicyReady(t, namespace, "web", 2*time.Minute)
	return &web{servers: pods[:2], svc: svc, vip: net.JoinHostPort(svc.Spec.ClusterIP, "80"),
		allowed: netnsOf(t, pods[2]), denied: netnsOf(t, pods[3])}
}

// admits waits until the client reaches the Service and the other pod
// does not.
func (w *web) admits(t *testing.T, what string) {
	t.Helper()
	framework.Eventually(t, 3*time.Minute, time.Second, what, func() (bool, error) {
		_, errA := framework.HTTPGet(w.allowed, w.vip, 2*time.Second)
		_, errD := framework.HTTPGet(w.denied, w.vip, time.Second)
		return errA == nil && errD != nil, fmt.Errorf("client: %v, other: %v", errA, errD)
	})
}
