//go:build e2e

package controller

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kuryr-k8s/kuryr/test/cloudnet"
	"github.com/kuryr-k8s/kuryr/test/e2e/framework"
)

// TestStandbyTakesOver: the Deployment's two controllers (controller_ha)
// are both Ready, one holds the Lease; killing the leader's process hands
// the work to the standby, which networks the next pods.
func TestStandbyTakesOver(t *testing.T) {
	c := framework.Connect(t)
	k := c.ConnectKuryr(t)
	ctx := context.Background()
	framework.Eventually(t, time.Minute, 500*time.Millisecond, "two Ready controllers", func() (bool, error) {
		pods, err := c.Kube.CoreV1().Pods(cloudnet.Namespace).List(ctx, metav1.ListOptions{
			LabelSelector: "app.kubernetes.io/name=kuryr,app.kubernetes.io/component=controller"})
		if err != nil {
			return false, err
		}
		ready := 0
		for _, p := range pods.Items {
			for _, cond := range p.Status.Conditions {
				if cond.Type == corev1.PodReady && cond.Status == corev1.ConditionTrue {
					ready++
				}
			}
		}
		return ready == 2, fmt.Errorf("%d of %d Ready", ready, len(pods.Items))
	})
	var leader string
	framework.Eventually(t, time.Minute, 500*time.Millisecond, "a leader", func() (bool, error) {
		var err error
		leader, _, err = cloudnet.Leader(ctx, c.Kube)
		return err == nil, err
	})
	ns := framework.Name("e2e-ha")
	c.CreateNamespace(t, ns)
	k.WaitKuryrPorts(t, c.CreatePods(t, ns, "before", 2), time.Minute)

	k.Crash(t, "kuryr-controller")
	start := time.Now()
	k.WaitKuryrPorts(t, c.CreatePods(t, ns, "after", 2), 2*time.Minute)
	t.Logf("new pods networked %s after the leader %s was killed", time.Since(start).Round(time.Millisecond), leader)
	now, _, err := cloudnet.Leader(ctx, c.Kube)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("leader now: %s", now)
}
