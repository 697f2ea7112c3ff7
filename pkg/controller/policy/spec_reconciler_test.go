package policy

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	kuryrv1 "github.com/kuryr-k8s/kuryr/api/v1"
	"github.com/kuryr-k8s/kuryr/pkg/controller/kit/kittest"
)

// TestSpecReconciler: a policy gets its KuryrNetworkPolicy (owned by it,
// named ports resolved over the selected pods); an edit rewrites the
// spec; the policy's deletion deletes it.
func TestSpecReconciler(t *testing.T) {
	web := intstr.FromString("web")
	np := &networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web", UID: "np-uid"},
		Spec: networkingv1.NetworkPolicySpec{
			PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Ingress: []networkingv1.NetworkPolicyIngressRule{{
				From:  []networkingv1.NetworkPolicyPeer{{PodSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "cli"}}}},
				Ports: []networkingv1.NetworkPolicyPort{{Port: &web}},
			}},
		}}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web-1", Labels: map[string]string{"app": "web"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Ports: []corev1.ContainerPort{{Name: "web", ContainerPort: 8080}}}}}}
	s := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(s)
	_ = kuryrv1.AddToScheme(s)
	cl := fake.NewClientBuilder().WithScheme(s).WithObjects(np, pod, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop"}}).Build()
	r := &SpecReconciler{Client: cl, Recorder: kittest.None{}}
	reconcile := func() {
		t.Helper()
		if _, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: types.NamespacedName{Namespace: "shop", Name: "web"}}); err != nil {
			t.Fatal(err)
		}
	}
	knp := func() (*kuryrv1.KuryrNetworkPolicy, error) {
		var k kuryrv1.KuryrNetworkPolicy
		return &k, cl.Get(context.Background(), client.ObjectKeyFromObject(np), &k)
	}
	reconcile()
	k, err := knp()
	if err != nil {
		t.Fatal(err)
	}
	if !metav1.IsControlledBy(k, np) || !k.Spec.Ingress || k.Spec.Egress || len(k.Spec.Peers) != 1 ||
		len(k.Spec.Rules) != 1 || k.Spec.Rules[0].PortMin != 8080 || k.Spec.Rules[0].Peer != k.Spec.Peers[0].Key {
		t.Fatalf("KuryrNetworkPolicy %+v", k)
	}
	np.Spec.PolicyTypes = []networkingv1.PolicyType{networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress}
	if err := cl.Update(context.Background(), np); err != nil {
		t.Fatal(err)
	}
	reconcile()
	if k, _ = knp(); !k.Spec.Egress {
		t.Fatalf("after the edit: %+v, want egress isolated", k.Spec)
	}
	if err := cl.Delete(context.Background(), np); err != nil {
		t.Fatal(err)
	}
	reconcile()
	// Deleted: its finalizer holds it until its groups are gone.
	if k, err := knp(); !apierrors.IsNotFound(err) && (err != nil || k.DeletionTimestamp.IsZero()) {
		t.Fatalf("after the policy's deletion: %v, want the KuryrNetworkPolicy being deleted", err)
	}
}
