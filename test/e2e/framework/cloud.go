//go:build e2e

package framework

import (
	"testing"
	"time"
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
