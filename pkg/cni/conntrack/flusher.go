package conntrack

import (
	"context"
	"maps"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/log"
)

// ctl runs ovs-vswitchd commands.
type ctl interface {
	Call(ctx context.Context, method string, params ...string) (string, error)
}

// Rechecks: after a Service's load balancer changes, its entries are
// looked at at once and again after each of these delays: Octavia reports
// a change before every ovn-controller has installed it, and a packet in
// between makes a stale entry again.
var Rechecks = []time.Duration{time.Second, 3 * time.Second}

// minReviewGap: reviews are at least this far apart.
const minReviewGap = 500 * time.Millisecond

// sweepPeriod: every ready Service is looked at this often anyway.
const sweepPeriod = time.Minute

var (
	flushed = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "kuryr_conntrack_flushed_total",
		Help: "Connection-tracking entries deleted because they kept a Service connection from its load balancer.",
	})
	failures = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "kuryr_conntrack_flush_failures_total",
		Help: "Failed dumps or flushes of the connection tracker (retried).",
	})
)

// MustRegister adds the flusher's metrics to a registry.
func MustRegister(r prometheus.Registerer) { r.MustRegister(flushed, failures) }

// Flusher deletes the stale entries of the Services it is told about,
// when their load balancer changes and every sweepPeriod.
type Flusher struct {
	Ctl ctl
	Now func() time.Time

	mu       sync.Mutex
	services map[string]*Service  // ready Services by key
	due      map[string]time.Time // next look at a Service
	later    map[string][]time.Time
	kick     chan struct{}
}

// NewFlusher returns a flusher with no Service yet.
func NewFlusher(c ctl) *Flusher {
	return &Flusher{Ctl: c, Now: time.Now, services: map[string]*Service{}, due: map[string]time.Time{},
		later: map[string][]time.Time{}, kick: make(chan struct{}, 1)}
}

// Set records what the Service key serves (nil: nothing, its load balancer
// is not ready or it is gone); a change schedules its entries' review now
// and at each of Rechecks.
func (f *Flusher) Set(key string, s *Service) {
	f.mu.Lock()
	defer f.mu.Unlock()
	old, had := f.services[key]
	if s == nil {
		delete(f.services, key)
		delete(f.due, key)
		delete(f.later, key)
		return
	}
	f.services[key] = s
	if had && reflect.DeepEqual(old, s) {
		return
	}
	now := f.Now()
	f.due[key] = now
	f.later[key] = nil
	for _, d := range Rechecks {
		f.later[key] = append(f.later[key], now.Add(d))
	}
	select {
	case f.kick <- struct{}{}:
	default:
	}
}

// Run reviews due Services until ctx ends.
func (f *Flusher) Run(ctx context.Context) {
	sweep := time.NewTicker(sweepPeriod)
	defer sweep.Stop()
	wake := time.NewTimer(time.Hour)
	defer wake.Stop()
	for {
		all := false
		select {
		case <-ctx.Done():
			return
		case <-f.kick:
		case <-wake.C:
		case <-sweep.C:
			all = true
		}
		if err := f.review(ctx, f.take(all)); err != nil {
			failures.Inc()
			log.FromContext(ctx).Error(err, "reviewing Services' connection-tracking entries")
		}
		// Each review dumps the whole table through ovs-vswitchd (its main
		// thread): changes coming in a burst share the next one.
		select {
		case <-ctx.Done():
			return
		case <-time.After(minReviewGap):
		}
		wake.Reset(f.next())
	}
}

// take returns the Services due now (every one with all), and moves their
// next look to the following recheck.
func (f *Flusher) take(all bool) []*Service {
	f.mu.Lock()
	defer f.mu.Unlock()
	now := f.Now()
	var out []*Service
	for _, key := range slices.Sorted(maps.Keys(f.services)) {
		t, ok := f.due[key]
		if !all && (!ok || t.After(now)) {
			continue
		}
		out = append(out, f.services[key])
		if ok && !t.After(now) {
			if rest := f.later[key]; len(rest) > 0 {
				f.due[key], f.later[key] = rest[0], rest[1:]
			} else {
				delete(f.due, key)
			}
		}
	}
	return out
}

// next is how long until the next Service is due.
func (f *Flusher) next() time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	wait := time.Hour
	for _, t := range f.due {
		wait = min(wait, max(0, t.Sub(f.Now())))
	}
	return wait
}

// gone: the entry expired between the dump and its flush (ovs-vswitchd
// answers ENOENT).
func gone(err error) bool { return strings.Contains(err.Error(), "No such file or directory") }

// review deletes the entries of services that keep connections from their
// load balancers: one dump, then one flush per stale entry.
func (f *Flusher) review(ctx context.Context, services []*Service) error {
	if len(services) == 0 {
		return nil
	}
	dump, err := f.Ctl.Call(ctx, "dpctl/dump-conntrack")
	if err != nil {
		return err
	}
	stale := Stale(Parse(dump), services)
	for _, e := range stale {
		if _, err := f.Ctl.Call(ctx, "dpctl/flush-conntrack", e.FlushArgs()...); err != nil && !gone(err) {
			return err
		}
		flushed.Inc()
		log.FromContext(ctx).V(1).Info("stale Service connection forgotten", "proto", e.Proto, "zone", e.Zone,
			"client", e.Orig.Src.String(), "service", e.Orig.Dst.String(), "port", e.Orig.Dport, "reply", e.Reply.Src.String())
	}
	if len(stale) > 0 {
		log.FromContext(ctx).Info("stale Service connections forgotten", "entries", len(stale), "services", len(services))
	}
	return nil
}
