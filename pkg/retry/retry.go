// Package retry waits out an unavailable dependency (Keystone, Neutron,
// OVS) at start-up with capped exponential backoff, logging each failure,
// instead of exiting and being restarted in a loop.
package retry

import (
	"context"
	"errors"
	"time"

	"github.com/go-logr/logr"
)

// Until calls fn until it succeeds, sleeping first, doubling up to
// maxDelay, between attempts. It returns ctx's error if ctx ends first.
func Until(ctx context.Context, logger logr.Logger, what string, first, maxDelay time.Duration, fn func(context.Context) error) error {
	return UntilReported(ctx, first, maxDelay, fn, func(err error, next time.Duration) {
		logger.Error(err, what+"; retrying", "in", next.String())
	})
}

// UntilReported is Until, handing each failure and the delay before the
// next attempt to report instead of logging it: for callers that log a
// failure once, in their own words, and show it elsewhere (readiness).
func UntilReported(ctx context.Context, first, maxDelay time.Duration, fn func(context.Context) error, report func(err error, next time.Duration)) error {
	delay := first
	for {
		err := fn(ctx)
		if err == nil {
			return nil
		}
		report(err, delay)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(delay):
		}
		delay = min(2*delay, maxDelay)
	}
}

// Stopping reports whether err is ctx's own cancellation: this process is
// stopping (or its leader stepping down), not a dependency failing. Such an
// error is left to whoever runs next and never shown as a failure (no
// Warning Event, no Ready=False condition).
func Stopping(ctx context.Context, err error) bool {
	return ctx.Err() != nil && errors.Is(err, context.Canceled)
}
