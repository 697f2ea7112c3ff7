package pod

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	kuryrv1 "github.com/kuryr-k8s/kuryr/api/v1"
)

func pod(uid string, mutate ...func(*corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop", UID: types.UID(uid)},
		Spec:       corev1.PodSpec{NodeName: "n1"},
	}
	for _, m := range mutate {
		m(p)
	}
	return p
}

func TestNeedsPort(t *testing.T) {
	tests := []struct {
		name string
		pod  *corev1.Pod
		want bool
	}{
		{"scheduled", pod("u"), true},
		{"not scheduled", pod("u", func(p *corev1.Pod) { p.Spec.NodeName = "" }), false},
		{"host network", pod("u", func(p *corev1.Pod) { p.Spec.HostNetwork = true }), false},
		{"succeeded", pod("u", func(p *corev1.Pod) { p.Status.Phase = corev1.PodSucceeded }), false},
		{"failed", pod("u", func(p *corev1.Pod) { p.Status.Phase = corev1.PodFailed }), false},
		{"terminating keeps its port", pod("u", func(p *corev1.Pod) { now := metav1.Now(); p.DeletionTimestamp = &now }), true},
	}
	for _, tt := range tests {
		if got := NeedsPort(tt.pod); got != tt.want {
			t.Errorf("%s: NeedsPort = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func newReconciler(t *testing.T, namespaced bool, objs ...client.Object) *Reconciler {
	s := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(s)
	_ = kuryrv1.AddToScheme(s)
	return &Reconciler{Client: fake.NewClientBuilder().WithScheme(s).WithObjects(objs...).Build(), Namespaced: namespaced, ProjectID: "p"}
}

func reconcileOnce(t *testing.T, r *Reconciler) {
	t.Helper()
	if _, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: types.NamespacedName{Namespace: "shop", Name: "web"}}); err != nil {
		t.Fatal(err)
	}
}

func TestCreatesKuryrPortAndNamespaceNetwork(t *testing.T) {
	r := newReconciler(t, true, pod("u1"))
	reconcileOnce(t, r)
	var kp kuryrv1.KuryrPort
	if err := r.Get(context.Background(), types.NamespacedName{Namespace: "shop", Name: "web"}, &kp); err != nil {
		t.Fatal(err)
	}
	if kp.Spec.PodUID != "u1" || kp.Labels[kuryrv1.NodeNameLabel] != "n1" || len(kp.Finalizers) != 1 || kp.OwnerReferences[0].UID != "u1" {
		t.Errorf("kuryrport %+v", kp)
	}
	var kn kuryrv1.KuryrNetwork
	if err := r.Get(context.Background(), types.NamespacedName{Namespace: "shop", Name: "shop"}, &kn); err != nil {
		t.Fatalf("namespace network: %v", err)
	}
}

func TestRecreatedPodReplacesKuryrPort(t *testing.T) {
	old := Desired(pod("old"))
	old.Finalizers = nil // let the fake client delete it at once
	r := newReconciler(t, false, pod("new"), old)
	reconcileOnce(t, r) // deletes the stale one
	reconcileOnce(t, r) // creates the new one
	var kp kuryrv1.KuryrPort
	if err := r.Get(context.Background(), types.NamespacedName{Namespace: "shop", Name: "web"}, &kp); err != nil {
		t.Fatal(err)
	}
	if kp.Spec.PodUID != "new" {
		t.Errorf("pod uid %s, want new", kp.Spec.PodUID)
	}
}

func TestGonePodReleasesKuryrPort(t *testing.T) {
	r := newReconciler(t, false, Desired(pod("u1")))
	reconcileOnce(t, r)
	var kp kuryrv1.KuryrPort
	if err := r.Get(context.Background(), types.NamespacedName{Namespace: "shop", Name: "web"}, &kp); err != nil {
		t.Fatal(err)
	}
	if kp.DeletionTimestamp.IsZero() {
		t.Error("KuryrPort of a gone pod is not being deleted")
	}
}

func TestTerminatingPodGetsNoNewKuryrPort(t *testing.T) {
	now := metav1.Now()
	dying := pod("u1", func(p *corev1.Pod) { p.DeletionTimestamp = &now; p.Finalizers = []string{"test/keep"} })
	r := newReconciler(t, false, dying)
	reconcileOnce(t, r)
	var kp kuryrv1.KuryrPort
	if err := r.Get(context.Background(), types.NamespacedName{Namespace: "shop", Name: "web"}, &kp); err == nil {
		t.Error("created a KuryrPort for a terminating pod")
	}
}

// A static pod's mirror pod can be deleted and recreated (a new UID) while
// the static pod runs on: its KuryrPort, not owned by the mirror pod, stays.
func TestRecreatedMirrorPodKeepsKuryrPort(t *testing.T) {
	mirror := func(uid string) *corev1.Pod {
		return pod(uid, func(p *corev1.Pod) {
			p.Annotations = map[string]string{configSource: "file", configMirror: "hash-1"}
		})
	}
	r := newReconciler(t, false, mirror("mirror-1"))
	reconcileOnce(t, r)
	var kp kuryrv1.KuryrPort
	if err := r.Get(context.Background(), types.NamespacedName{Namespace: "shop", Name: "web"}, &kp); err != nil {
		t.Fatal(err)
	}
	if len(kp.OwnerReferences) != 0 || kp.Spec.KubeletPodUID != "hash-1" || !kp.Spec.PodStatic {
		t.Fatalf("static pod's KuryrPort %+v", kp)
	}
	r.MirrorGrace = time.Minute
	if err := r.Delete(context.Background(), mirror("mirror-1")); err != nil {
		t.Fatal(err)
	}
	reconcileOnce(t, r) // the mirror pod is gone for now: wait
	if err := r.Create(context.Background(), mirror("mirror-2")); err != nil {
		t.Fatal(err)
	}
	reconcileOnce(t, r)
	if err := r.Get(context.Background(), types.NamespacedName{Namespace: "shop", Name: "web"}, &kp); err != nil || !kp.DeletionTimestamp.IsZero() {
		t.Errorf("the KuryrPort went with the mirror pod: %v %v", err, kp.DeletionTimestamp)
	}
}

// A static pod that is really gone releases its KuryrPort after the grace.
func TestGoneStaticPodReleasesAfterGrace(t *testing.T) {
	static := pod("mirror-1", func(p *corev1.Pod) {
		p.Annotations = map[string]string{configSource: "file", configMirror: "hash-1"}
	})
	kp := Desired(static)
	r := newReconciler(t, false, kp)
	r.MirrorGrace = time.Hour
	res, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: types.NamespacedName{Namespace: "shop", Name: "web"}})
	if err != nil || res.RequeueAfter == 0 {
		t.Fatalf("released at once: %+v %v", res, err)
	}
	r.MirrorGrace = 0
	reconcileOnce(t, r)
	var got kuryrv1.KuryrPort
	if err := r.Get(context.Background(), types.NamespacedName{Namespace: "shop", Name: "web"}, &got); err == nil && got.DeletionTimestamp.IsZero() {
		t.Error("the gone static pod's KuryrPort was not released after the grace")
	}
}
