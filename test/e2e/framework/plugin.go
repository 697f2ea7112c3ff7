package framework

import (
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
)

// Plugin is kubectl-kuryr built from this tree into the test's temporary
// directory (the Go build cache makes a second build a link), to run as a
// user does: the cloud's KUBECONFIG is in the environment.
func Plugin(t testing.TB) string {
	t.Helper()
	_, here, _, _ := runtime.Caller(0)
	bin := filepath.Join(t.TempDir(), "kubectl-kuryr")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/kubectl-kuryr")
	cmd.Dir = filepath.Join(filepath.Dir(here), "..", "..", "..")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build kubectl-kuryr: %v: %s", err, out)
	}
	return bin
}
