//go:build e2e

package plugin

import (
	"context"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kuryr-k8s/kuryr/pkg/cli/supportbundle"
	"github.com/kuryr-k8s/kuryr/test/e2e/framework"
)

// TestSupportBundle: `kubectl kuryr supportbundle` writes both sides of
// the cluster (kuryr's objects, logs, each hypervisor node's attachments,
// the tagged Neutron ports, doctor's findings) and not kuryr's
// credentials.
func TestSupportBundle(t *testing.T) {
	c := framework.Connect(t)
	out := filepath.Join(t.TempDir(), "bundle.tar.gz")
	msg, err := exec.Command(framework.Plugin(t), "supportbundle", "-f", out, "--since", "1h").CombinedOutput()
	t.Logf("kubectl kuryr supportbundle:\n%s", msg)
	if err != nil {
		t.Fatalf("supportbundle: %v", err)
	}
	files, err := supportbundle.ReadArchive(out)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"kubernetes/kuryrports.yaml", "kubernetes/nodes.yaml", "kubernetes/kuryr.conf",
		"openstack/ports.json", "openstack/security-groups.json", "doctor.txt"}
	for _, n := range c.Nodes {
		want = append(want, "nodes/"+n+"-attachments.txt")
	}
	for _, w := range want {
		if len(files[w]) == 0 {
			t.Errorf("%s missing or empty", w)
		}
	}
	logs := 0
	for name := range files {
		if strings.HasPrefix(name, "logs/kuryr-controller-") || strings.HasPrefix(name, "logs/kuryr-daemon-") {
			logs++
		}
	}
	if logs < 1+len(c.Nodes) {
		t.Errorf("%d kuryr logs, want at least the controller's and each hypervisor daemon's", logs)
	}
	// kuryr's credentials: the application credential's secret in the
	// Secret the bundle must not copy.
	secret, err := c.Kube.CoreV1().Secrets("kube-system").Get(context.Background(), "kuryr-openstack", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`"?application_credential_secret"?\s*:\s*"?([^",\s}]+)`).FindSubmatch(secret.Data["clouds.yaml"])
	if m == nil {
		t.Fatal("no application credential secret in kuryr's clouds.yaml to look for")
	}
	for name, content := range files {
		if strings.Contains(content, string(m[1])) {
			t.Errorf("%s holds kuryr's application credential secret", name)
		}
	}
}
