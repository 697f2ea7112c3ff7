package openstack

import (
	"context"
	"errors"
	"net"

	"github.com/gophercloud/gophercloud/v2"
)

// Unreachable reports that a call got no answer at all: a network error,
// a deadline passed, or the caller gave up (its context cancelled).
func Unreachable(err error) bool {
	var ne net.Error
	if errors.As(err, &ne) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return true
	}
	var oe *net.OpError
	return errors.As(err, &oe)
}

// Refused reports that the service (Neutron, Octavia) answered a request
// with a client error (4xx): it was understood and nothing was done.
func Refused(err error) bool {
	var ue gophercloud.ErrUnexpectedResponseCode
	return errors.As(err, &ue) && ue.Actual >= 400 && ue.Actual < 500
}

// Unclear reports that a write may or may not have been done: the service
// answered with a server error, or never answered (timeout, connection
// reset, the caller gave up). Neutron and Octavia have no idempotency
// keys, so before the same thing is created again it must be looked up
// (by its tags).
// A refusal (4xx) is clear: nothing was done.
func Unclear(err error) bool {
	if err == nil || Refused(err) {
		return false
	}
	var ue gophercloud.ErrUnexpectedResponseCode
	if errors.As(err, &ue) {
		return ue.Actual >= 500
	}
	// Anything else failed on the way: the request may have been sent.
	return true
}
