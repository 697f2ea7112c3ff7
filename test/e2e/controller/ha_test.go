//go:build e2e

package controller

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kuryr-k8s/kuryr/test/e2e/framework"
)

// TestStandbyTakesOver runs two controllers with controller_ha: killing the
// leader hands the work to the standby, which networks the next pods.
func TestStandbyTakesOver(t *testing.T) {
	c := framework.Connect(t)
	k := c.ConnectKuryr(t)
	ha := []string{"--set", "kubernetes.controller_ha=true"}
	k.Controller(t, "restart", ha...)
	t.Cleanup(func() { k.Controller(t, "restart") })
	framework.Eventually(t, time.Minute, 500*time.Millisecond, "a leader", func() (bool, error) {
		l, err := c.Kube.CoordinationV1().Leases("kube-system").Get(context.Background(), "kuryr-controller-"+k.Cluster, metav1.GetOptions{})
		return err == nil && l.Spec.HolderIdentity != nil, err
	})
	k.Standby(t, "start", ha...)
	t.Cleanup(func() { k.Standby(t, "kill") })
	ns := framework.Name("e2e-ha")
	c.CreateNamespace(t, ns)
	k.WaitKuryrPorts(t, c.CreatePods(t, ns, "before", 2), time.Minute)

	k.Controller(t, "kill")
	start := time.Now()
	k.WaitKuryrPorts(t, c.CreatePods(t, ns, "after", 2), 2*time.Minute)
	t.Logf("the standby networked new pods %s after the leader was killed", time.Since(start).Round(time.Millisecond))
}
