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
