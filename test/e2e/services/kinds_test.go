//go:build e2e

package services

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kuryrv1 "github.com/kuryr-k8s/kuryr/api/v1"
	"github.com/kuryr-k8s/kuryr/test/e2e/framework"
)

// TestSelectorlessHeadlessExternalName: a selector-less Service takes its
// members from a user's EndpointSlice (and gets an SCTP listener, which
// Octavia accepts though no SCTP can be sent here); headless and
// ExternalName Services get no load balancer.
func TestSelectorlessHeadlessExternalName(t *testing.T) {
	c, k, ns := framework.Setup(t, "e2e-svckinds")
	backends := createBackends(t, c, ns, "manual", 0, 2)
	cl := clientPod(t, c, ns, "client", c.Nodes[0])

	manual := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "manual"},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{
			{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080)},
			{Name: "sctp", Port: 9999, Protocol: corev1.ProtocolSCTP, TargetPort: intstr.FromInt32(9999)}}}}
	svc := createService(t, c, manual)
	es := &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Namespace: ns, Name: "manual-1", Labels: map[string]string{discoveryv1.LabelServiceName: "manual"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports: []discoveryv1.EndpointPort{{Name: ptr.To("http"), Port: ptr.To[int32](8080), Protocol: ptr.To(corev1.ProtocolTCP)},
			{Name: ptr.To("sctp"), Port: ptr.To[int32](9999), Protocol: ptr.To(corev1.ProtocolSCTP)}},
	}
	for _, b := range backends {
		es.Endpoints = append(es.Endpoints, discoveryv1.Endpoint{Addresses: []string{b.Status.PodIP}})
	}
	if _, err := c.Kube.DiscoveryV1().EndpointSlices(ns).Create(context.Background(), es, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	klb := waitKLB(t, k, ns, "manual", 4, 2*time.Minute)
	protos := map[string]bool{}
	for _, l := range klb.Status.Listeners {
		protos[l.Protocol] = true
	}
	if !protos["TCP"] || !protos["SCTP"] {
		t.Errorf("listeners %+v, want TCP and SCTP", klb.Status.Listeners)
	}
	reachesAll(t, cl, httpCmd(svc.Spec.ClusterIP, 80), podNames(backends), time.Minute)

	headless := webService(ns, "headless", "manual")
	headless.Spec.ClusterIP = corev1.ClusterIPNone
	createService(t, c, headless)
	external := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "external"},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: "example.invalid"}}
	createService(t, c, external)
	time.Sleep(5 * time.Second) // give the controller time to (wrongly) act
	for _, name := range []string{"headless", "external"} {
		var got kuryrv1.KuryrLoadBalancer
		err := k.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &got)
		if !apierrors.IsNotFound(err) {
			t.Errorf("Service %s got a KuryrLoadBalancer (err %v)", name, err)
		}
	}
}

// TestDNSAndAPIService: cluster DNS answers Service names from pods through
// the kube-dns Service (UDP), names reach Services, and a pod lists
// Services with its service-account token through https://kubernetes.default.
func TestDNSAndAPIService(t *testing.T) {
	c, k, ns := framework.Setup(t, "e2e-dns")
	t.Cleanup(func() {
		if t.Failed() {
			c.LogServiceState(t, k, "kube-system", "kube-dns")
			c.LogServiceState(t, k, ns, "web")
		}
	})
	backends := createBackends(t, c, ns, "web", 0, 2)
	svc := createService(t, c, webService(ns, "web", "web"))
	waitKLB(t, k, ns, "web", 2, 2*time.Minute)
	waitKLB(t, k, "kube-system", "kube-dns", -1, 2*time.Minute)
	// Let the pod's service account list Services in its namespace.
	ctx := context.Background()
	if _, err := c.Kube.RbacV1().Roles(ns).Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "list-services"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"services"}, Verbs: []string{"list"}}}},
		metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Kube.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "list-services"},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "list-services"},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: "default", Namespace: ns}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for i, node := range c.Nodes {
		cl := clientPod(t, c, ns, fmt.Sprintf("client-%d", i), node)
		fqdn := "web." + ns + ".svc.cluster.local"
		framework.Eventually(t, 2*time.Minute, 2*time.Second, "nslookup "+fqdn+" from "+node, func() (bool, error) {
			out, err := framework.Exec(t, cl, "nslookup", fqdn)
			return err == nil && strings.Contains(out, svc.Spec.ClusterIP), fmt.Errorf("%v: %s", err, out)
		})
		reachesAll(t, cl, httpCmd("web."+ns, 80), podNames(backends), time.Minute)
		framework.Eventually(t, time.Minute, 2*time.Second, "the API through https://kubernetes.default from "+node, func() (bool, error) {
			out, err := framework.Exec(t, cl, "testapp", "kube-get", "https://kubernetes.default/api/v1/namespaces/"+ns+"/services")
			return err == nil && strings.Contains(out, `"name":"web"`), fmt.Errorf("%v: %.300s", err, out)
		})
	}
	t.Logf("DNS, Service names and the API service work from pods on %d nodes", len(c.Nodes))
}
