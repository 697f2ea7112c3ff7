package openstack

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"time"
)

// Whether each OpenStack service answers is read off the requests kuryr
// makes: a request that got no answer (refused, reset, timed out) or a
// gateway's 502, 503 or 504 marks its service down; any other answer marks
// it up. When a service that was down answers again, the subscribers are
// told, so that what waited on it is retried at once instead of at the end
// of a backoff that grew during the outage (kit.Retry).

// health is the process's view; every client's requests go through it.
var health = &Health{down: map[string]time.Time{}}

// Services' names, as the metrics and the recovery notices give them.
const (
	ServiceNetwork      = "network"
	ServiceLoadBalancer = "load-balancer"
	ServiceIdentity     = "identity"
)

// Health follows the OpenStack services' availability.
type Health struct {
	mu   sync.Mutex
	down map[string]time.Time // since when
	subs []func(service string, downFor time.Duration)
}

// Availability is the process's Health.
func Availability() *Health { return health }

// OnRecovery registers fn, called (on a goroutine of its own) with a
// service's name and how long it was down each time it answers again.
func (h *Health) OnRecovery(fn func(service string, downFor time.Duration)) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.subs = append(h.subs, fn)
}

// Down lists the services seen down, with since when.
func (h *Health) Down() map[string]time.Time {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make(map[string]time.Time, len(h.down))
	for s, t := range h.down {
		out[s] = t
	}
	return out
}

// observe records one request's outcome.
func (h *Health) observe(service string, req *http.Request, resp *http.Response, err error) {
	switch {
	case err != nil && errors.Is(req.Context().Err(), context.Canceled):
		return // the caller gave up: says nothing of the service
	case err != nil || resp.StatusCode == http.StatusBadGateway || resp.StatusCode == http.StatusServiceUnavailable ||
		resp.StatusCode == http.StatusGatewayTimeout:
		h.mu.Lock()
		if _, ok := h.down[service]; !ok {
			h.down[service] = time.Now()
			available.WithLabelValues(service).Set(0)
		}
		h.mu.Unlock()
		return
	}
	h.up(service)
}

// up marks a service up, telling the subscribers if it was down.
func (h *Health) up(service string) {
	h.mu.Lock()
	since, was := h.down[service]
	delete(h.down, service)
	subs := h.subs
	h.mu.Unlock()
	available.WithLabelValues(service).Set(1)
	if was {
		for _, fn := range subs {
			go fn(service, time.Since(since))
		}
	}
}

// probeTimeout bounds a probe: a service under load may take seconds.
const probeTimeout = 10 * time.Second

// Probe is a cheap request through the clients (and so through
// authentication: the identity service's probe may be a Neutron request,
// which renews the token when it must).
type Probe func(ctx context.Context) error

// Watch sends, every interval while a service is down, its probe: when
// every object waiting on it is in a long backoff, the probe is what sees
// it answer again; a probe that succeeds marks its service up. It returns
// when ctx ends.
func (h *Health) Watch(ctx context.Context, interval time.Duration, probes map[string]Probe) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		for service := range h.Down() {
			if p, ok := probes[service]; ok {
				pctx, cancel := context.WithTimeout(ctx, probeTimeout)
				if p(pctx) == nil {
					h.up(service)
				}
				cancel()
			}
		}
	}
}
