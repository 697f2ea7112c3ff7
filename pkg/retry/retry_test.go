package retry

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/go-logr/logr"
)

func TestUntil(t *testing.T) {
	calls := 0
	err := Until(context.Background(), logr.Discard(), "x", time.Millisecond, 4*time.Millisecond, func(context.Context) error {
		if calls++; calls < 4 {
			return errors.New("not yet")
		}
		return nil
	})
	if err != nil || calls != 4 {
		t.Errorf("err %v after %d calls", err, calls)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := Until(ctx, logr.Discard(), "x", time.Hour, time.Hour, func(context.Context) error { return errors.New("never") }); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
}

func TestStopping(t *testing.T) {
	live := context.Background()
	stopped, cancel := context.WithCancel(context.Background())
	cancel()
	wrapped := fmt.Errorf("create port: %w", context.Canceled)
	for _, tc := range []struct {
		name string
		ctx  context.Context
		err  error
		want bool
	}{
		{"own cancellation", stopped, wrapped, true},
		{"cancellation while running (a client's, not ours)", live, wrapped, false},
		{"other error while stopping", stopped, errors.New("HTTP 500"), false},
		{"timeout while stopping", stopped, context.DeadlineExceeded, false},
	} {
		if got := Stopping(tc.ctx, tc.err); got != tc.want {
			t.Errorf("%s: Stopping = %t, want %t", tc.name, got, tc.want)
		}
	}
}
