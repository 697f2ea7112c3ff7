//go:build e2e

package controller

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kuryr-k8s/kuryr/test/e2e/framework"
)

// TestStandbyTakesOver: the Deployment's two controllers (controller_ha)
// are both Ready, one holds the Lease. A leader that stops (its process
// frozen, so that it can neither renew the Lease nor come back first, as a
// restarted container could) loses the Lease to the standby, which networks
// the next pods. Resumed, the old leader finds the Lease gone and stops.
func TestStandbyTakesOver(t *testing.T) {
	c := framework.Connect(t)
	k := c.ConnectKuryr(t)
	ctx := context.Background()
	framework.Eventually(t, time.Minute, 500*time.Millisecond, "two Ready controllers", func() (bool, error) {
		n, err := readyControllers(ctx, c)
		return n == 2, err
	})
	var leader string
	framework.Eventually(t, time.Minute, 500*time.Millisecond, "a leader", func() (bool, error) {
		var err error
		leader, _, err = framework.Leader(ctx, c.Kube)
		return err == nil, err
	})
	ns := framework.Name("e2e-ha")
	c.CreateNamespace(t, ns)
	k.WaitKuryrPorts(t, c.CreatePods(t, ns, "before", 2), time.Minute)
	restarts, _ := lastRun(ctx, c, leader)

	k.Crash(t, "kuryr-controller", "STOP", leader)
	frozen := time.Now()
	resumed := false
	resume := func() {
		if !resumed {
			resumed = true
			k.Crash(t, "kuryr-controller", "CONT", leader)
		}
	}
	t.Cleanup(resume)
	var now string
	framework.Eventually(t, time.Minute, 250*time.Millisecond, "the standby holding the Lease", func() (bool, error) {
		var err error
		now, _, err = framework.Leader(ctx, c.Kube)
		return err == nil && now != leader, fmt.Errorf("holder %s (%v)", now, err)
	})
	t.Logf("the standby %s took the Lease %s after the leader %s was frozen", now, time.Since(frozen).Round(time.Millisecond), leader)

	// Resumed at once (before the kubelet's liveness probe restarts it), the
	// old leader must stop by itself, on its own clock.
	before, _ := lastRun(ctx, c, leader)
	resume()
	resumedAt := time.Now()
	if before > restarts {
		t.Logf("the kubelet restarted the frozen leader before it was resumed: its own stop is not tested this time")
	} else {
		var ended *corev1.ContainerStateTerminated
		framework.Eventually(t, time.Minute, 250*time.Millisecond, "the old leader's process ended", func() (bool, error) {
			var n int32
			n, ended = lastRun(ctx, c, leader)
			return n > restarts && ended != nil, fmt.Errorf("%d restarts", n)
		})
		// FinishedAt has whole seconds.
		took := ended.FinishedAt.Sub(resumedAt.Truncate(time.Second))
		t.Logf("the old leader stopped within %s of being resumed (exit code %d)", took, ended.ExitCode)
		if ended.ExitCode != 1 || took > 3*time.Second {
			t.Errorf("the resumed leader ended with code %d %s after it was resumed; want code 1 (it stopped itself) within 3 s",
				ended.ExitCode, took)
		}
	}

	k.WaitKuryrPorts(t, c.CreatePods(t, ns, "after", 2), 2*time.Minute)
	t.Logf("new pods networked %s after the leader was frozen", time.Since(frozen).Round(time.Millisecond))
	if now2, _, err := framework.Leader(ctx, c.Kube); err != nil || now2 != now {
		t.Errorf("leader %s after the old one came back, want %s still (%v)", now2, now, err)
	}
	framework.Eventually(t, 2*time.Minute, 500*time.Millisecond, "two Ready controllers again", func() (bool, error) {
		n, err := readyControllers(ctx, c)
		return n == 2, err
	})
}

func controllerPods(ctx context.Context, c *framework.Cloud) ([]corev1.Pod, error) {
	pods, err := c.Kube.CoreV1().Pods(framework.KuryrNamespace).List(ctx, metav1.ListOptions{
		LabelSelector: "app.kubernetes.io/name=kuryr,app.kubernetes.io/component=controller"})
	if err != nil {
		return nil, err
	}
	return pods.Items, nil
}

func readyControllers(ctx context.Context, c *framework.Cloud) (int, error) {
	pods, err := controllerPods(ctx, c)
	ready := 0
	for _, p := range pods {
		for _, cond := range p.Status.Conditions {
			if cond.Type == corev1.PodReady && cond.Status == corev1.ConditionTrue {
				ready++
			}
		}
	}
	return ready, fmt.Errorf("%d of %d Ready (%v)", ready, len(pods), err)
}

// lastRun: how often the pod's container restarted, and how its last run
// ended.
func lastRun(ctx context.Context, c *framework.Cloud, pod string) (int32, *corev1.ContainerStateTerminated) {
	p, err := c.Kube.CoreV1().Pods(framework.KuryrNamespace).Get(ctx, pod, metav1.GetOptions{})
	if err != nil || len(p.Status.ContainerStatuses) == 0 {
		return 0, nil
	}
	st := p.Status.ContainerStatuses[0]
	return st.RestartCount, st.LastTerminationState.Terminated
}
