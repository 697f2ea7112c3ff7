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
		leader, _, err = cloudnet.Leader(ctx, c.Kube)
		return err == nil, err
	})
	ns := framework.Name("e2e-ha")
	c.CreateNamespace(t, ns)
	k.WaitKuryrPorts(t, c.CreatePods(t, ns, "before", 2), time.Minute)
	restarts, _ := containerRestarts(ctx, c, leader)

	k.Crash(t, "kuryr-controller", "STOP")
	start := time.Now()
	resumed := false
	resume := func() {
		if !resumed {
			resumed = true
			k.Crash(t, "kuryr-controller", "CONT", leader)
		}
	}
	t.Cleanup(resume)
	k.WaitKuryrPorts(t, c.CreatePods(t, ns, "after", 2), 2*time.Minute)
	t.Logf("new pods networked %s after the leader %s was frozen", time.Since(start).Round(time.Millisecond), leader)
	now, _, err := cloudnet.Leader(ctx, c.Kube)
	if err != nil {
		t.Fatal(err)
	}
	if now == leader {
		t.Fatalf("the frozen leader %s still holds the Lease", leader)
	}
	t.Logf("leader now: %s", now)

	resume()
	resumedAt := time.Now()
	var exit int32
	framework.Eventually(t, time.Minute, 500*time.Millisecond, "the old leader's process ended", func() (bool, error) {
		n, code := containerRestarts(ctx, c, leader)
		exit = code
		return n > restarts, fmt.Errorf("%d restarts", n)
	})
	// Exit code 1: it stopped itself on losing the Lease; 137: the kubelet's
	// liveness probe killed it first.
	t.Logf("the old leader's process ended %s after it was resumed (exit code %d)", time.Since(resumedAt).Round(time.Millisecond), exit)
	if now2, _, err := cloudnet.Leader(ctx, c.Kube); err != nil || now2 != now {
		t.Errorf("leader %s after the old one came back, want %s still (%v)", now2, now, err)
	}
	framework.Eventually(t, 2*time.Minute, 500*time.Millisecond, "two Ready controllers again", func() (bool, error) {
		n, err := readyControllers(ctx, c)
		return n == 2, err
	})
}

func controllerPods(ctx context.Context, c *framework.Cloud) ([]corev1.Pod, error) {
	pods, err := c.Kube.CoreV1().Pods(cloudnet.Namespace).List(ctx, metav1.ListOptions{
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

// containerRestarts: how often the pod's container restarted, and the exit
// code of its last run.
func containerRestarts(ctx context.Context, c *framework.Cloud, pod string) (int32, int32) {
	p, err := c.Kube.CoreV1().Pods(cloudnet.Namespace).Get(ctx, pod, metav1.GetOptions{})
	if err != nil || len(p.Status.ContainerStatuses) == 0 {
		return 0, 0
	}
	st := p.Status.ContainerStatuses[0]
	if term := st.LastTerminationState.Terminated; term != nil {
		return st.RestartCount, term.ExitCode
	}
	return st.RestartCount, 0
}
