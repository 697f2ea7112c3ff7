//go:build e2e && destructive

package uninstall

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/containernetworking/plugins/pkg/ns"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kuryr-k8s/kuryr/test/e2e/framework"
)

// TestUpgradeFromPrevious: kuryr of the previous commit (KURYR_UPGRADE_FROM,
// default HEAD~1: its image and its chart, installed as a release is) is
// upgraded to this checkout's with helm while a pod opens a connection to
// a ClusterIP Service every 200 ms and a NetworkPolicy admits it and
// denies another pod. No connection of the admitted pod fails, none of the
// denied pod's gets through, and afterwards every kuryr pod runs this
// checkout's image and a new pod gets its network.
func TestUpgradeFromPrevious(t *testing.T) {
	c, k, ns := framework.Setup(t, "upgrade")
	from := os.Getenv("KURYR_UPGRADE_FROM")
	if from == "" {
		from = "HEAD~1"
	}
	t.Cleanup(func() { k.Ctl(t, "upgrade") }) // this checkout's, whatever happened
	start := time.Now()
	k.Ctl(t, "install-release", previousRelease(t, from))
	t.Logf("kuryr of %s installed in %s", from, time.Since(start).Round(time.Second))

	w := newWeb(t, c, k, ns, corev1.ServiceTypeClusterIP)
	w.admits(t, "the client reaches the Service, the other pod does not")

	traffic := startTraffic(t, w.allowed, w.denied, w.vip)
	start = time.Now()
	k.Ctl(t, "upgrade")
	t.Logf("upgraded to this checkout in %s", time.Since(start).Round(time.Second))
	time.Sleep(5 * time.Second) // traffic after the last pod rolled, too
	traffic.stop(t, "the upgrade")
	checkRunsThisCheckout(t, c)
	late := createLabelled(t, c, ns, "late", map[string]string{"app": "web"}, 1)
	c.WaitReady(t, late, 3*time.Minute)
}

// previousRelease builds rev's image and packages its chart into a
// directory as make release lays one out (kuryr-ctl.sh install-release).
func previousRelease(t *testing.T, rev string) string {
	t.Helper()
	root := strings.TrimSpace(run(t, "", "git", "rev-parse", "--show-toplevel"))
	dir := t.TempDir()
	src := filepath.Join(dir, "src")
	run(t, root, "git", "worktree", "prune") // a crashed run's
	run(t, root, "git", "worktree", "add", "--detach", src, rev)
	t.Cleanup(func() {
		if out, err := exec.Command("git", "-C", root, "worktree", "remove", "--force", src).CombinedOutput(); err != nil {
			t.Logf("git worktree remove %s: %v: %s (the next run prunes it)", src, err, out)
		}
	})
	run(t, src, "bash", "hack/image.sh")
	rel := filepath.Join(dir, "release")
	if err := os.MkdirAll(rel, 0o755); err != nil {
		t.Fatal(err)
	}
	for from, to := range map[string]string{"kuryr.tar": "kuryr-image.oci.tar", "kuryr.ref": "image.ref"} {
		if err := os.Rename(filepath.Join(src, "_output/images", from), filepath.Join(rel, to)); err != nil {
			t.Fatal(err)
		}
	}
	helm := strings.TrimSpace(run(t, root, "bash", "hack/helm.sh"))
	run(t, root, helm, "package", filepath.Join(src, "deploy/helm/kuryr"), "--destination", rel)
	return rel
}

func run(t *testing.T, dir string, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %v: %v: %s", name, args, err, out)
	}
	return string(out)
}

func createLabelled(t *testing.T, c *framework.Cloud, ns, prefix string, labels map[string]string, n int) []*corev1.Pod {
	t.Helper()
	var out []*corev1.Pod
	for i := 0; i < n; i++ {
		p := c.TestPod(ns, fmt.Sprintf("%s-%d", prefix, i), c.Nodes[i%len(c.Nodes)])
		p.Labels = labels
		created, err := c.Kube.CoreV1().Pods(ns).Create(context.Background(), p, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, created)
	}
	return out
}

// netnsOf opens the pod's network namespace, closed when the test ends.
func netnsOf(t *testing.T, p *corev1.Pod) ns.NetNS {
	t.Helper()
	n, err := framework.PodNetns(p.Status.PodIP)
	if err != nil {
		t.Fatalf("%s's network namespace: %v", p.Name, err)
	}
	t.Cleanup(func() { _ = n.Close() })
	return n
}

// checkRunsThisCheckout: every kuryr pod runs the image `make up` built
// from this checkout.
func checkRunsThisCheckout(t *testing.T, c *framework.Cloud) {
	t.Helper()
	want, err := os.ReadFile(filepath.Join(strings.TrimSpace(run(t, "", "git", "rev-parse", "--show-toplevel")), "_output/images/kuryr.ref"))
	if err != nil {
		t.Fatal(err)
	}
	pods, err := c.Kube.CoreV1().Pods("kube-system").List(context.Background(), metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=kuryr"})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil && p.Spec.Containers[0].Image != strings.TrimSpace(string(want)) {
			t.Errorf("%s runs %s, want %s", p.Name, p.Spec.Containers[0].Image, strings.TrimSpace(string(want)))
		}
	}
}
