package cli

import (
	"context"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/kuryr-k8s/kuryr/pkg/cli/describe"
	"github.com/kuryr-k8s/kuryr/pkg/cli/env"
)

func TestListNames(t *testing.T) {
	scheme, err := env.Scheme()
	if err != nil {
		t.Fatal(err)
	}
	meta := func(ns, name string) metav1.ObjectMeta { return metav1.ObjectMeta{Namespace: ns, Name: name} }
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(
		&corev1.Pod{ObjectMeta: meta("demo", "web-1")}, &corev1.Pod{ObjectMeta: meta("demo", "web-2")},
		&corev1.Pod{ObjectMeta: meta("other", "db")},
		&corev1.Service{ObjectMeta: meta("demo", "web")},
		&networkingv1.NetworkPolicy{ObjectMeta: meta("demo", "allow-web")},
	).Build()
	for kind, want := range map[string][]string{
		describe.KindPod: {"web-1", "web-2"}, describe.KindService: {"web"}, describe.KindNetworkPolicy: {"allow-web"},
	} {
		got, err := listNames(context.Background(), c, "demo", kind)
		slices.Sort(got)
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("%s: %v, %v; want %v", kind, got, err, want)
		}
	}
}
