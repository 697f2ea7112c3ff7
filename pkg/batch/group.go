// Package batch coalesces concurrent calls into bulk calls (group commit).
// A burst of pods reaches kuryr as many concurrent, identical requests:
// Neutron port creations in the controller, OVS port additions on a node.
// Each is far cheaper per item in bulk (one Neutron transaction, one OVSDB
// transaction), while a lone request must not wait for company.
package batch

import (
	"context"
	"errors"
	"sync"
	"time"
)

// ErrShort is a bulk call answered with fewer results than items.
var ErrShort = errors.New("bulk call answered with fewer results than items")

// Group sends the items asked for while earlier bulk calls are in flight
// together in the next one. A quiet system sees one item per call and no
// added latency.
type Group[T, R any] struct {
	bulk               func(ctx context.Context, items []T) ([]R, error)
	one                func(ctx context.Context, item T) (R, error)
	retry              func(err error) bool
	inFlight, maxBatch int
	pace               *pace // nil: every call up to maxBatch

	mu      sync.Mutex
	queue   []*call[T, R]
	sending int
}

type call[T, R any] struct {
	ctx  context.Context
	item T
	done chan struct{}
	res  R
	err  error
}

// New returns a Group that makes at most inFlight calls at a time, each of
// at most maxBatch items. bulk does items in one call, its results in the
// order of items (results with an error give every item both); one does a
// single item; retry reports that a failed bulk call did nothing (it was
// refused as a whole), so each item is tried alone and gets its own answer.
func New[T, R any](inFlight, maxBatch int, bulk func(context.Context, []T) ([]R, error),
	one func(context.Context, T) (R, error), retry func(error) bool) *Group[T, R] {
	return &Group[T, R]{bulk: bulk, one: one, retry: retry, inFlight: max(inFlight, 1), maxBatch: max(maxBatch, 1)}
}

// Paced makes g size its calls so that each is expected to take at most
// budget at the pace the server has shown (initialPerItem until it has
// answered): calls that run past their clients' bound may still commit.
func (g *Group[T, R]) Paced(budget, initialPerItem time.Duration) *Group[T, R] {
	g.pace = newPace(budget, initialPerItem)
	return g
}

// Limit is the most items the next call may carry.
func (g *Group[T, R]) Limit() int {
	if g.pace == nil {
		return g.maxBatch
	}
	return min(g.maxBatch, g.pace.limit())
}

// Do does item, in a bulk call with whatever else is waiting. It is not
// abandoned when ctx ends once sent: only its caller can record what the
// call created; the calls themselves are bounded.
func (g *Group[T, R]) Do(ctx context.Context, item T) (R, error) {
	c := &call[T, R]{ctx: ctx, item: item, done: make(chan struct{})}
	g.mu.Lock()
	g.queue = append(g.queue, c)
	g.mu.Unlock()
	g.pump()
	<-c.done
	return c.res, c.err
}

// pump starts calls while there is work and a free slot.
func (g *Group[T, R]) pump() {
	for {
		g.mu.Lock()
		if len(g.queue) == 0 || g.sending >= g.inFlight {
			g.mu.Unlock()
			return
		}
		// Share what is waiting among the free slots, so that parallel
		// calls use a server's workers; only free ones, so that nothing
		// waits behind a call already in flight.
		free := g.inFlight - g.sending
		n := min((len(g.queue)+free-1)/free, g.Limit())
		batch := g.queue[:n:n]
		g.queue = g.queue[n:]
		g.sending++
		g.mu.Unlock()
		go g.send(batch)
	}
}

func (g *Group[T, R]) send(batch []*call[T, R]) {
	defer func() {
		g.mu.Lock()
		g.sending--
		g.mu.Unlock()
		g.pump()
	}()
	live := batch[:0:0]
	for _, c := range batch {
		if err := c.ctx.Err(); err != nil {
			var zero R
			c.finish(zero, err) // its caller is gone: never do it
			continue
		}
		live = append(live, c)
	}
	switch {
	case len(live) == 1:
		start := time.Now()
		r, err := g.one(live[0].ctx, live[0].item)
		g.observe(start, 1, err)
		live[0].finish(r, err)
	case len(live) > 1:
		g.sendBulk(live)
	}
}

// observe tells the pace how long a call took: a success, its time; a
// timeout, a time the server took at least.
func (g *Group[T, R]) observe(start time.Time, n int, err error) {
	if g.pace == nil {
		return
	}
	switch d := time.Since(start); {
	case err == nil:
		g.pace.observe(d, n)
	case timedOut(err):
		g.pace.atLeast(d, n)
	}
}

func timedOut(err error) bool {
	var t interface{ Timeout() bool }
	return errors.Is(err, context.DeadlineExceeded) || errors.As(err, &t) && t.Timeout()
}

func (g *Group[T, R]) sendBulk(live []*call[T, R]) {
	items := make([]T, len(live))
	for i, c := range live {
		items[i] = c.item
	}
	// The first caller's context stands for all: if it ends early the call
	// fails, and retry decides whether each item is tried alone (with its
	// own context) or gets the error.
	start := time.Now()
	rs, err := g.bulk(live[0].ctx, items)
	g.observe(start, len(items), err)
	if err != nil && len(rs) == 0 && g.retry(err) {
		var wg sync.WaitGroup
		for _, c := range live {
			wg.Add(1)
			go func() {
				defer wg.Done()
				c.finish(g.one(c.ctx, c.item))
			}()
		}
		wg.Wait()
		return
	}
	for i, c := range live {
		var r R
		switch {
		case i < len(rs):
			r = rs[i]
		case err == nil:
			c.finish(r, ErrShort)
			continue
		}
		c.finish(r, err)
	}
}

func (c *call[T, R]) finish(r R, err error) {
	c.res, c.err = r, err
	close(c.done)
}
