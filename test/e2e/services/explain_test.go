//go:build e2e

package services

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/kuryr-k8s/kuryr/test/e2e/framework"
)

// explainUnreached logs, when a Service did not reach every backend it
// should, what tells a dataplane fault from a provider's: where each
// backend runs and whether the client reaches it directly (the
// backends' web port, 8080), and the OVN
// load balancers that name the Service's address with their backends,
// and each node's tunnel neighbours.
func explainUnreached(t *testing.T, p *corev1.Pod, cmd string, want []string) {
	t.Helper()
	out, _ := exec.Command("kubectl", "get", "pods", "-n", p.Namespace, "-o",
		"custom-columns=NAME:.metadata.name,IP:.status.podIP,NODE:.spec.nodeName,PHASE:.status.phase", "--no-headers").CombinedOutput()
	t.Logf("explain: client %s on %s (%s); pods of %s:\n%s", p.Name, p.Spec.NodeName, p.Status.PodIP, p.Namespace, out)
	var vips []string
	for _, f := range strings.Fields(cmd) {
		if net.ParseIP(f) != nil {
			vips = append(vips, f)
		}
	}
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) < 3 || !slices.Contains(want, f[0]) {
			continue
		}
		direct, err := framework.Exec(t, p, "sh", "-c", fmt.Sprintf(`printf 'GET / HTTP/1.0\r\n\r\n' | nc -w 2 %s 8080 | tail -n 1`, f[1]))
		t.Logf("explain: %s (%s on %s) directly from %s: %q %v", f[0], f[1], f[2], p.Name, strings.TrimSpace(direct), err)
	}
	ctl := os.Getenv("KURYR_CTL")
	if ctl == "" {
		return
	}
	lbs, err := exec.Command("bash", ctl, "nbctl", "lb-list").CombinedOutput()
	if err != nil {
		t.Logf("explain: ovn-nbctl lb-list: %v: %s", err, lbs)
		return
	}
	for _, line := range strings.Split(string(lbs), "\n") {
		for _, v := range vips {
			if strings.Contains(line, v+":") {
				t.Logf("explain: OVN: %s", strings.TrimSpace(line))
			}
		}
	}
	// Each node's Geneve neighbours (a stale one drops what a node
	// tunnels to the other).
	nodes, _ := exec.Command("kubectl", "get", "nodes", "-o", "name").CombinedOutput()
	for _, n := range strings.Fields(string(nodes)) {
		n = strings.TrimPrefix(n, "node/")
		phy, _ := exec.Command("ip", "-n", os.Getenv("KURYR_CLOUD_NETNS_PREFIX")+n, "-br", "link", "show", "br-phy").CombinedOutput()
		neigh, err := exec.Command("bash", ctl, "appctl", n, "tnl/neigh/show").CombinedOutput()
		t.Logf("explain: %s: %s tunnel neighbours (%v):\n%s", n, strings.TrimSpace(string(phy)), err, neigh)
	}
}
