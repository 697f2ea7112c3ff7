package service

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestAwaitSlices(t *testing.T) {
	now := time.Now()
	svc := func(age time.Duration, selector bool) *corev1.Service {
		s := &corev1.Service{ObjectMeta: metav1.ObjectMeta{CreationTimestamp: metav1.NewTime(now.Add(-age))}}
		if selector {
			s.Spec.Selector = map[string]string{"app": "web"}
		}
		return s
	}
	for _, tc := range []struct {
		name   string
		svc    *corev1.Service
		slices int
		wait   bool
	}{
		{"new, no slice yet: waits", svc(time.Second, true), 0, true},
		{"new, its slice there: goes", svc(time.Second, true), 1, false},
		{"no selector (user-managed slices): goes", svc(time.Second, false), 0, false},
		{"older than the grace: goes", svc(time.Minute, true), 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := awaitSlices(tc.svc, tc.slices, now) > 0; got != tc.wait {
				t.Fatalf("waits %v, want %v", got, tc.wait)
			}
		})
	}
}
