package ovs

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/go-logr/logr"
	"github.com/ovn-org/libovsdb/cache"
	"github.com/ovn-org/libovsdb/client"
	"github.com/ovn-org/libovsdb/model"
	"github.com/ovn-org/libovsdb/ovsdb"
)

// Backoff between attempts to reach ovsdb-server; pollCache bounds a wait
// on the cache should an event be missed (libovsdb drops events when its
// buffer is full, and refills the cache silently after a reconnect).
const (
	minBackoff  = 100 * time.Millisecond
	maxBackoff  = 5 * time.Second
	dialTimeout = 10 * time.Second
	pollCache   = 100 * time.Millisecond
)

// session is a libovsdb client of the node's Open_vSwitch database: it
// connects in the background and monitors the tables kuryr reads into the
// client's cache; once it has, libovsdb reconnects (and monitors again)
// whenever the session is lost.
type session struct {
	endpoint string
	cl       client.Client
	stop     context.CancelFunc
	done     chan struct{}

	mu      sync.Mutex
	up      chan struct{} // closed once connected and monitoring
	ready   bool
	closed  bool
	lastErr error
	changed chan struct{} // closed and replaced at each cache event
	watch   sync.Once
}

func newBackoff() backoff.BackOff {
	b := backoff.NewExponentialBackOff()
	b.InitialInterval, b.MaxInterval = minBackoff, maxBackoff
	b.MaxElapsedTime = 0 // libovsdb panics if its reconnect backoff gives up
	return b
}

func newSession(endpoint string) *session {
	ctx, stop := context.WithCancel(context.Background())
	s := &session{endpoint: endpoint, stop: stop, done: make(chan struct{}), up: make(chan struct{}),
		changed: make(chan struct{}), lastErr: fmt.Errorf("ovsdb %s: not connected yet", endpoint)}
	dbModel, err := clientDBModel()
	if err == nil {
		quiet := logr.Discard()
		s.cl, err = client.NewOVSDBClient(dbModel, client.WithEndpoint(endpoint),
			client.WithReconnect(dialTimeout, newBackoff()), client.WithLogger(&quiet))
	}
	if err != nil {
		s.lastErr = fmt.Errorf("ovsdb client of %s: %w", endpoint, err)
		close(s.done)
		return s
	}
	go s.run(ctx)
	return s
}

// run connects and monitors, retrying with a backoff until it has; libovsdb
// then keeps the session.
func (s *session) run(ctx context.Context) {
	defer close(s.done)
	b := newBackoff()
	for {
		err := s.connect(ctx)
		if ctx.Err() != nil {
			return
		}
		if err == nil {
			s.mu.Lock()
			s.ready = true
			close(s.up)
			s.mu.Unlock()
			return
		}
		s.mu.Lock()
		s.lastErr = err
		s.mu.Unlock()
		select {
		case <-ctx.Done():
			return
		case <-time.After(b.NextBackOff()):
		}
	}
}

func (s *session) connect(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, dialTimeout)
	defer cancel()
	// Connect is a no-op on a connected client (a monitor that failed).
	if err := s.cl.Connect(ctx); err != nil {
		return fmt.Errorf("connect to ovsdb %s: %w", s.endpoint, err)
	}
	s.watch.Do(func() {
		s.cl.Cache().AddEventHandler(&cache.EventHandlerFuncs{
			AddFunc:    func(string, model.Model) { s.notify() },
			UpdateFunc: func(string, model.Model, model.Model) { s.notify() },
			DeleteFunc: func(string, model.Model) { s.notify() },
		})
	})
	if _, err := s.cl.Monitor(ctx, s.cl.NewMonitor(monitorOpts()...)); err != nil {
		return fmt.Errorf("monitor %s on %s: %w", dbName, s.endpoint, err)
	}
	return nil
}

func (s *session) notify() {
	s.mu.Lock()
	close(s.changed)
	s.changed = make(chan struct{})
	s.mu.Unlock()
}

// Close ends the session and stops reconnecting. (A reconnection libovsdb
// has under way when Close is called goes on until it succeeds.)
func (s *session) Close() {
	s.stop()
	<-s.done
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	if s.cl != nil {
		s.cl.Close()
	}
}

// connected waits, at most wait and within ctx, for a live session whose
// monitor has filled the cache.
func (s *session) connected(ctx context.Context, wait time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	s.mu.Lock()
	up := s.up
	s.mu.Unlock()
	select {
	case <-up:
	case <-ctx.Done():
		s.mu.Lock()
		defer s.mu.Unlock()
		return fmt.Errorf("ovsdb not connected: %w", s.lastErr)
	}
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		s.mu.Lock()
		closed := s.closed
		s.mu.Unlock()
		if closed {
			return errors.New("ovsdb not connected: client closed")
		}
		// While libovsdb reconnects it has no current endpoint.
		if s.cl.Connected() && s.cl.CurrentEndpoint() != "" {
			return nil
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
			return fmt.Errorf("ovsdb not connected: session with %s lost, reconnecting", s.endpoint)
		}
	}
}

// transact runs ops in one transaction, after waiting at most wait for a
// session. An error means it did nothing, unless ctx ended while the
// server had it.
func (s *session) transact(ctx context.Context, wait time.Duration, ops ...ovsdb.Operation) ([]ovsdb.OperationResult, error) {
	if err := s.connected(ctx, wait); err != nil {
		return nil, err
	}
	res, err := s.cl.Transact(ctx, ops...)
	if err != nil {
		return nil, fmt.Errorf("transact: %w", err)
	}
	if opErrs, err := ovsdb.CheckOperationResults(res, ops); err != nil {
		for _, e := range opErrs {
			err = fmt.Errorf("%w; %s", err, e)
		}
		return nil, fmt.Errorf("transaction refused: %w", err)
	}
	return res, nil
}

// waitFor waits, within ctx, for ok to hold of the cache, checking it
// again at each cache event.
func (s *session) waitFor(ctx context.Context, ok func(context.Context, client.Client) (bool, error)) error {
	tick := time.NewTicker(pollCache)
	defer tick.Stop()
	for {
		s.mu.Lock()
		changed := s.changed
		s.mu.Unlock()
		if done, err := ok(ctx, s.cl); err != nil || done {
			return err
		}
		select {
		case <-changed:
		case <-tick.C:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}
