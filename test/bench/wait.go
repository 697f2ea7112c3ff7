package main

import (
	"time"

	"github.com/kuryr-k8s/kuryr/test/e2e/framework"
)

// poll waits with the framework's Poll: cond every interval until it says
// done, for up to timeout; an error cond wraps with framework.Stop ends
// the wait at once. At timeout it returns late's error: the benchmarks
// say in their own words what did not happen.
func poll(timeout, interval time.Duration, cond func() (bool, error), late func() error) error {
	err := framework.Poll(timeout, interval, "", cond)
	if framework.IsTimeout(err) {
		return late()
	}
	return err
}
