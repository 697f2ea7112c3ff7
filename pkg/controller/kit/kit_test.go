package kit

import (
	"context"
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/kuryr-k8s/kuryr/pkg/controller/kit/kittest"
)

const finalizer = "kuryr.openstack.org/test"

func TestFinalizerPair(t *testing.T) {
	s := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(s)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cm"}}
	c := fake.NewClientBuilder().WithScheme(s).WithObjects(cm).Build()
	ctx := context.Background()
	for i := 0; i < 2; i++ { // the second add changes nothing
		if err := AddFinalizer(ctx, c, cm, finalizer); err != nil {
			t.Fatal(err)
		}
	}
	var got corev1.ConfigMap
	if err := c.Get(ctx, client.ObjectKeyFromObject(cm), &got); err != nil || got.Finalizers[0] != finalizer || len(got.Finalizers) != 1 {
		t.Fatalf("finalizers %v (%v), want one", got.Finalizers, err)
	}
	if err := RemoveFinalizer(ctx, c, &got, finalizer); err != nil || controllerutil.ContainsFinalizer(&got, finalizer) {
		t.Fatalf("remove: %v, finalizers %v", err, got.Finalizers)
	}
	gone := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "gone", Finalizers: []string{finalizer}}}
	if err := RemoveFinalizer(ctx, c, gone, finalizer); err != nil {
		t.Errorf("removing from an object gone: %v, want no failure", err)
	}
}

func TestFail(t *testing.T) {
	cause := errors.New("subnet full")
	var ready []string
	rec := &kittest.Events{}
	f := Failure{Kind: "SubnetFull", Action: "CreatePort",
		SetReady: func(reason, msg string) error { ready = append(ready, reason+": "+msg); return nil }}
	if err := Fail(context.Background(), rec, f, cause); err != cause {
		t.Errorf("returned %v, want the cause", err)
	}
	if len(ready) != 1 || ready[0] != "SubnetFull: subnet full" || len(rec.Reasons()) != 1 || rec.Reasons()[0] != "SubnetFull" {
		t.Errorf("ready %v, events %v: want one of each", ready, rec.Reasons())
	}
	stopping, cancel := context.WithCancel(context.Background())
	cancel()
	if err := Fail(stopping, rec, f, context.Canceled); err != context.Canceled || len(ready) != 1 || len(rec.Reasons()) != 1 {
		t.Errorf("stopping: %v, ready %v, events %v: want nothing told", err, ready, rec.Reasons())
	}
}
