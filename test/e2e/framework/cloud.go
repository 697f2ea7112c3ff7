//go:build e2e

package framework

import (
	"os"
	"testing"
	"time"

	"github.com/kuryr-k8s/kuryr/test/faultproxy"
)

func mustEnv(t testing.TB, name string) string {
	t.Helper()
	v, err := Getenv(name)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// Connect reads the local cloud's environment and builds its clients,
// failing the test when it cannot.
func Connect(t testing.TB) *Cloud {
	t.Helper()
	c, err := Load(Options{OpenStackTimeout: 60 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// Eventually polls cond every interval until it returns true, failing the
// test with the last error after timeout.
func Eventually(t testing.TB, timeout, interval time.Duration, what string, cond func() (bool, error)) {
	t.Helper()
	if err := Poll(timeout, interval, what, cond); err != nil {
		t.Fatal(err)
	}
}

// FaultProxy returns a fault-injecting proxy (no faults yet) to the
// OpenStack endpoint in the environment variable urlEnv (NEUTRON_URL,
// OCTAVIA_URL), trusting the cloud's CA when it has one.
func FaultProxy(t testing.TB, urlEnv string) *faultproxy.Proxy {
	t.Helper()
	p, err := faultproxy.New(os.Getenv(urlEnv), time.Now().UnixNano())
	if err != nil {
		t.Fatal(err)
	}
	if ca := os.Getenv("KURYR_CLOUD_CA"); ca != "" {
		if err := p.TrustCA(ca); err != nil {
			t.Fatal(err)
		}
	}
	return p
}
