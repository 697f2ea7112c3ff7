//go:build e2e

// Package plugin runs kubectl kuryr against the local cloud as a user
// does: the binary built from this tree, the cloud's kubeconfig.
package plugin

import (
	"context"
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kuryr-k8s/kuryr/pkg/cli/doctor"
	"github.com/kuryr-k8s/kuryr/test/e2e/framework"
)

// TestCheck: `kubectl kuryr check` passes on a working cluster, every
// step OK, and leaves no namespace behind.
func TestCheck(t *testing.T) {
	c := framework.Connect(t)
	start := time.Now()
	cmd := exec.Command(framework.Plugin(t), "check", "--image", c.TestImage, "-o", "json")
	out, err := cmd.Output()
	var stderr string
	if ee, ok := err.(*exec.ExitError); ok {
		stderr = string(ee.Stderr)
	}
	var findings []doctor.Finding
	if jerr := json.Unmarshal(out, &findings); jerr != nil {
		t.Fatalf("check: %v / %v: %s %s", err, jerr, out, stderr)
	}
	t.Logf("kubectl kuryr check took %s", time.Since(start).Round(time.Second))
	var steps []string
	for _, f := range findings {
		t.Logf("%-4s %-14s %s", f.Status, f.Check, f.Message)
		steps = append(steps, f.Check)
		if f.Status != doctor.OK {
			t.Errorf("%s: %s %s", f.Check, f.Status, f.Message)
		}
	}
	if want := "nodes, node → pod, pod ↔ pod, pod → Service, DNS, NetworkPolicy, cleanup"; strings.Join(steps, ", ") != want {
		t.Errorf("steps %q, want %q", strings.Join(steps, ", "), want)
	}
	if err != nil {
		t.Errorf("exit: %v: %s", err, stderr)
	}
	nss, err := c.Kube.CoreV1().Namespaces().List(context.Background(),
		metav1.ListOptions{LabelSelector: "app.kubernetes.io/managed-by=kubectl-kuryr"})
	if err != nil {
		t.Fatal(err)
	}
	for _, ns := range nss.Items {
		if ns.DeletionTimestamp == nil {
			t.Errorf("namespace %s left behind", ns.Name)
		}
	}
}

// TestCheckFailsWithStoppedDaemon: with one node's kuryr-daemon stopped
// (its process frozen, as a hung daemon is), `kubectl kuryr check` exits 1
// at once and names that daemon, without making a namespace.
func TestCheckFailsWithStoppedDaemon(t *testing.T) {
	c := framework.Connect(t)
	k := c.ConnectKuryr(t)
	node := c.Nodes[len(c.Nodes)-1]
	k.Ctl(t, "crash", node+"-kuryr-daemon", "STOP")
	t.Cleanup(func() {
		k.Ctl(t, "crash", node+"-kuryr-daemon", "CONT")
		// The kubelet may have restarted it meanwhile (liveness): wait
		// until a daemon serves the node again.
		waitDaemonReady(t, c, node, true)
	})
	waitDaemonReady(t, c, node, false)
	plugin := framework.Plugin(t)
	start := time.Now()
	out, err := exec.Command(plugin, "check", "--image", c.TestImage).CombinedOutput()
	t.Logf("kubectl kuryr check (%s):\n%s", time.Since(start).Round(time.Millisecond), out)
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 {
		t.Errorf("exit: %v, want status 1", err)
	}
	if want := "kuryr-daemon on " + node; !strings.Contains(string(out), want) || !strings.Contains(string(out), "FAIL") {
		t.Errorf("output does not FAIL naming %q", want)
	}
	if time.Since(start) > 30*time.Second {
		t.Errorf("took %s: a stopped daemon should fail the check before any probe pod waits", time.Since(start))
	}
}

// waitDaemonReady waits until node's kuryr-daemon pod is Ready (or not).
func waitDaemonReady(t *testing.T, c *framework.Cloud, node string, ready bool) {
	t.Helper()
	err := framework.Poll(120*time.Second, time.Second, "kuryr-daemon on "+node, func() (bool, error) {
		pods, err := c.Kube.CoreV1().Pods("kube-system").List(context.Background(),
			metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=kuryr,app.kubernetes.io/component=daemon",
				FieldSelector: "spec.nodeName=" + node})
		if err != nil || len(pods.Items) == 0 {
			return !ready, nil
		}
		for _, cond := range pods.Items[0].Status.Conditions {
			if cond.Type == "Ready" {
				return (cond.Status == "True") == ready, nil
			}
		}
		return !ready, nil
	})
	if err != nil {
		t.Fatalf("kuryr-daemon on %s Ready=%v: %v", node, ready, err)
	}
}
