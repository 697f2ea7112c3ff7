//go:build e2e

package controller

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kuryr-k8s/kuryr/test/e2e/framework"
)

// TestStandbyTakesOver runs two controllers with controller_ha: both are
// Ready, and killing the leader hands the work to the standby, which
// networks the next pods.
func TestStandbyTakesOver(t *testing.T) {
	c := framework.Connect(t)
	k := c.ConnectKuryr(t)
	ha := []string{"--set", "kubernetes.controller_ha=true"}
	k.Controller(t, "restart", ha...)
	t.Cleanup(func() { k.Controller(t, "restart") })
	framework.Eventually(t, time.Minute, 500*time.Millisecond, "a leader", func() (bool, error) {
		l, err := c.Kube.CoordinationV1().Leases("kube-system").Get(context.Background(), "kuryr-controller", metav1.GetOptions{})
		return err == nil && l.Spec.HolderIdentity != nil, err
	})
	k.Standby(t, "start", ha...)
	t.Cleanup(func() { k.Standby(t, "kill") })
	// Both are Ready (a rolling update must not wait for a standby) and
	// live: the standby on ports 8083/9656.
	for _, url := range []string{"http://127.0.0.1:8082/readyz", "http://127.0.0.1:8083/readyz", "http://127.0.0.1:8083/livez"} {
		framework.Eventually(t, 30*time.Second, 250*time.Millisecond, url, func() (bool, error) {
			resp, err := http.Get(url)
			if err != nil {
				return false, err
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			return resp.StatusCode == 200, fmt.Errorf("HTTP %d: %s", resp.StatusCode, body)
		})
	}
	ns := framework.Name("e2e-ha")
	c.CreateNamespace(t, ns)
	k.WaitKuryrPorts(t, c.CreatePods(t, ns, "before", 2), time.Minute)

	k.Controller(t, "kill")
	start := time.Now()
	k.WaitKuryrPorts(t, c.CreatePods(t, ns, "after", 2), 2*time.Minute)
	t.Logf("the standby networked new pods %s after the leader was killed", time.Since(start).Round(time.Millisecond))
}
