package framework

import (
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// Poll calls cond every interval until it returns true, and returns nil;
// or, after timeout, an error naming what it waited for and cond's last
// error. An error cond wraps with Stop ends the wait at once: Poll returns
// it unwrapped.
func Poll(timeout, interval time.Duration, what string, cond func() (bool, error)) error {
	deadline := time.Now().Add(timeout)
	for {
		ok, err := cond()
		if ok {
			return nil
		}
		var stop stopError
		if errors.As(err, &stop) {
			return stop.err
		}
		if time.Now().After(deadline) {
			return timeoutError{fmt.Errorf("timed out after %s waiting for %s (last error: %v)", timeout, what, err)}
		}
		time.Sleep(interval)
	}
}

// Stop wraps an error that ends a Poll at once (nil stays nil).
func Stop(err error) error {
	if err == nil {
		return nil
	}
	return stopError{err}
}

type stopError struct{ err error }

func (s stopError) Error() string { return s.err.Error() }

// timeoutError is Poll giving up.
type timeoutError struct{ error }

// IsTimeout says whether err is Poll giving up (not cond's Stop).
func IsTimeout(err error) bool {
	var t timeoutError
	return errors.As(err, &t)
}

// Name returns a unique, DNS-safe name for a test resource.
func Name(prefix string) string {
	return fmt.Sprintf("%s-%d", prefix, time.Now().UnixNano()%1_000_000_000)
}

// IsReady reports the pod's Ready condition.
func IsReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
