package ovsdb

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"
)

// Backoff between attempts to reach ovsdb-server.
const (
	minBackoff = 100 * time.Millisecond
	maxBackoff = 5 * time.Second
)

// Client is a long-lived session with one database of an ovsdb-server. It
// connects in the background, monitors the tables given to New into its
// Cache, and reconnects (monitoring again) whenever the session is lost.
type Client struct {
	endpoint, db string
	monitor      map[string]any
	cache        *Cache
	stop         context.CancelFunc

	mu      sync.Mutex
	conn    *conn         // nil while down
	up      chan struct{} // closed while conn is set
	lastErr error
}

// New starts a client of database db at endpoint that monitors columns of
// tables (table -> columns). Close stops it.
func New(endpoint, db string, tables map[string][]string) *Client {
	mon := map[string]any{}
	for t, cols := range tables {
		mon[t] = map[string]any{"columns": cols}
	}
	ctx, stop := context.WithCancel(context.Background())
	c := &Client{endpoint: endpoint, db: db, monitor: mon, cache: newCache(), stop: stop,
		up: make(chan struct{}), lastErr: fmt.Errorf("ovsdb %s: not connected yet", endpoint)}
	go c.run(ctx)
	return c
}

// Cache is what the monitor reported; it may lag a transaction's reply.
func (c *Client) Cache() *Cache { return c.cache }

// Close ends the session and stops reconnecting.
func (c *Client) Close() {
	c.stop()
	c.mu.Lock()
	cn := c.conn
	c.mu.Unlock()
	if cn != nil {
		cn.close(errClosed)
	}
}

func (c *Client) run(ctx context.Context) {
	backoff := minBackoff
	for ctx.Err() == nil {
		cn, err := c.connect(ctx)
		if err == nil {
			backoff = minBackoff
			c.setConn(cn, nil)
			select {
			case <-cn.dead:
			case <-ctx.Done():
				cn.close(errClosed)
			}
			err = cn.err
		}
		c.setConn(nil, err)
		select {
		case <-ctx.Done():
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, maxBackoff)
	}
}

// connect opens a session and fills the cache with the monitored tables.
func (c *Client) connect(ctx context.Context) (*conn, error) {
	dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	nc, err := dial(dctx, c.endpoint)
	if err != nil {
		return nil, err
	}
	cn := newConn(nc, func(params json.RawMessage) {
		var p []json.RawMessage
		if json.Unmarshal(params, &p) == nil && len(p) == 2 {
			_ = c.cache.update(p[1])
		}
	})
	done := make(chan error, 1)
	err = cn.start("monitor", []any{c.db, nil, c.monitor}, func(res json.RawMessage, err error) {
		if err == nil {
			err = c.cache.reset(res)
		}
		done <- err
	})
	if err == nil {
		select {
		case err = <-done:
		case <-dctx.Done():
			err = dctx.Err()
		}
	}
	if err != nil {
		cn.close(err)
		return nil, fmt.Errorf("monitor %s on %s: %w", c.db, c.endpoint, err)
	}
	return cn, nil
}

func (c *Client) setConn(cn *conn, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if cn != nil {
		c.conn = cn
		close(c.up)
		return
	}
	if c.conn != nil {
		c.up = make(chan struct{})
	}
	c.conn, c.lastErr = nil, err
}

// Connected waits, at most wait and within ctx, for a live session whose
// monitor has filled the cache.
func (c *Client) Connected(ctx context.Context, wait time.Duration) error {
	_, err := c.connected(ctx, wait)
	return err
}

func (c *Client) connected(ctx context.Context, wait time.Duration) (*conn, error) {
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	for {
		c.mu.Lock()
		cn, up, last := c.conn, c.up, c.lastErr
		c.mu.Unlock()
		if cn != nil {
			return cn, nil
		}
		select {
		case <-up:
		case <-ctx.Done():
			return nil, fmt.Errorf("ovsdb not connected: %w", last)
		}
	}
}

// Transact runs ops in one transaction, after waiting at most wait for a
// session. An error means it did nothing, unless ctx ended while the
// server had it.
func (c *Client) Transact(ctx context.Context, wait time.Duration, ops ...Op) ([]OpResult, error) {
	cn, err := c.connected(ctx, wait)
	if err != nil {
		return nil, err
	}
	params := make([]any, 0, len(ops)+1)
	params = append(params, c.db)
	for _, op := range ops {
		params = append(params, op)
	}
	raw, err := cn.call(ctx, "transact", params)
	if err != nil {
		return nil, fmt.Errorf("transact: %w", err)
	}
	var res []OpResult
	if err := json.Unmarshal(raw, &res); err != nil {
		return nil, fmt.Errorf("decode transact reply: %w", err)
	}
	if err := txnError(ops, res); err != nil {
		return nil, fmt.Errorf("transaction refused: %w", err)
	}
	return res, nil
}
