package main

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/go-logr/logr"

	"github.com/kuryr-k8s/kuryr/pkg/openstack"
	"github.com/kuryr-k8s/kuryr/pkg/retry"
)

// openStackStatus is the controller's connection to OpenStack, as its
// /readyz tells it.
type openStackStatus struct {
	mu        sync.Mutex
	connected bool
	// reason is why the last attempt failed, explained.
	reason string
}

// check is the "openstack" readiness check.
func (s *openStackStatus) check() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.connected:
		return nil
	case s.reason != "":
		return errors.New("not connected to OpenStack, retrying: " + s.reason)
	}
	return errors.New("not connected to OpenStack yet")
}

func (s *openStackStatus) set(connected bool, reason string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.connected, s.reason = connected, reason
}

// connectOpenStack calls connect until it succeeds, waiting first, then
// twice as long up to maxDelay, between attempts: a Keystone down at
// start, or credentials being fixed (the clouds.yaml Secret is read again
// on each attempt), is waited out, not a crash loop. Each new reason is
// logged once, explained and without a stack trace (the same one again
// only at V(1)); /readyz says the latest.
func connectOpenStack(ctx context.Context, logger logr.Logger, status *openStackStatus, first, maxDelay time.Duration,
	connect func(context.Context) (*openstack.Clients, error)) (*openstack.Clients, error) {
	var c *openstack.Clients
	var last string
	err := retry.UntilReported(ctx, first, maxDelay, func(ctx context.Context) error {
		var err error
		c, err = connect(ctx)
		return err
	}, func(err error, next time.Duration) {
		reason := openstack.Explain(err)
		status.set(false, reason)
		log := logger.V(1)
		if reason != last {
			log, last = logger, reason
		}
		log.Info("cannot connect to OpenStack; retrying", "reason", reason, "in", next.String())
	})
	if err != nil {
		return nil, err
	}
	status.set(true, "")
	logger.Info("connected to OpenStack", "identity", c.Identity)
	for _, w := range c.Warnings {
		logger.Info("OpenStack: " + w)
	}
	return c, nil
}
