package retry

import (
	"context"
	"errors"
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
