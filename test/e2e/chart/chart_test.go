//go:build e2e

// Package chart checks kuryr's Helm chart and kustomize base against the
// local cloud's API server, and that a configuration change rolls the
// pods.
package chart

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/kuryr-k8s/kuryr/test/e2e/framework"
)

// TestChartValid: every value set of test/chart renders to objects the
// API server accepts (strict validation, the Prometheus Operator's CRDs
// for the monitoring objects), the kustomize base too, and every value
// set that must be refused is refused with its reason
// (hack/check-chart.sh).
func TestChartValid(t *testing.T) {
	framework.Connect(t)
	root := repoRoot(t)
	out, err := exec.Command("bash", filepath.Join(root, "hack/check-chart.sh")).CombinedOutput()
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		t.Log(line)
	}
	if err != nil {
		t.Fatalf("hack/check-chart.sh: %v", err)
	}
	sets, _ := filepath.Glob(filepath.Join(root, "test/chart/*.yaml"))
	got := 0
	for _, line := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(line, "ok   ") && !strings.Contains(line, "deploy/base") {
			got++
		}
	}
	if got != len(sets) {
		t.Errorf("%d value sets checked, test/chart has %d", got, len(sets))
	}
}

// TestConfigChangeRollsPods: the controller's and the daemons' pod
// templates carry the checksum of kuryr.conf, the controller's (the only
// one mounting them) also that of the credentials, so a change to either
// (helm upgrade) rolls who reads it, and a change of neither does not
// change them.
func TestConfigChangeRollsPods(t *testing.T) {
	root := repoRoot(t)
	helm := helmPath(t, root)
	base := filepath.Join(root, "test/chart/defaults.yaml")
	render := func(extra ...string) map[string]string {
		args := append([]string{"template", "kuryr", filepath.Join(root, "deploy/helm/kuryr"), "-n", "kube-system", "-f", base}, extra...)
		out, err := exec.Command(helm, args...).CombinedOutput()
		if err != nil {
			t.Fatalf("helm %v: %v: %s", args, err, out)
		}
		sums := map[string]string{}
		for _, m := range regexp.MustCompile(`(checksum/\w+): (\w+)`).FindAllStringSubmatch(string(out), -1) {
			sums[m[1]] += m[2][:8] + " "
		}
		return sums
	}
	before := render()
	if len(strings.Fields(before["checksum/config"])) != 2 || len(strings.Fields(before["checksum/openstack"])) != 1 {
		t.Fatalf("checksums %v: want config on the controller and the daemon, openstack on the controller only", before)
	}
	for _, c := range []struct {
		name, set, changes string
	}{
		{"a kuryr.conf option", "config.kubernetes.port_debug=false", "checksum/config"},
		{"the credentials", "openstack.cloudsYaml=clouds: {}", "checksum/openstack"},
		{"the controller's replicas", "controller.replicas=3", ""},
	} {
		after := render("--set", c.set)
		for k, v := range before {
			if changed := after[k] != v; changed != (k == c.changes) {
				t.Errorf("%s (%s): %s %q → %q", c.name, c.set, k, v, after[k])
			}
		}
	}
}

func repoRoot(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("git", "rev-parse", "--show-toplevel").Output()
	if err != nil {
		t.Fatalf("repository root: %v", err)
	}
	return strings.TrimSpace(string(out))
}

func helmPath(t *testing.T, root string) string {
	t.Helper()
	cmd := exec.Command("bash", filepath.Join(root, "hack/helm.sh"))
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("hack/helm.sh: %v", err)
	}
	return strings.TrimSpace(string(out))
}
