//go:build e2e

package framework

import (
	"slices"
	"testing"
)

// Setup is the preamble of a test on the local cloud: the cloud's clients
// (Connect), kuryr's (ConnectKuryr), and a namespace of the test's own,
// named after prefix (Name), deleted when the test ends, waiting until it
// is gone (CreateNamespace).
func Setup(t testing.TB, prefix string) (*Cloud, *Kuryr, string) {
	t.Helper()
	c := Connect(t)
	if !slices.Equal(c.PodNodes, c.Nodes) {
		t.Logf("workloads on %v (KURYR_E2E_POD_NODES=vms)", c.PodNodes)
	}
	k := c.ConnectKuryr(t)
	ns := Name(prefix)
	c.CreateNamespace(t, ns)
	return c, k, ns
}
