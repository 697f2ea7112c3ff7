package ovsdb

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
)

// message is a JSON-RPC 1.0 request, response or notification.
type message struct {
	ID     json.RawMessage `json:"id,omitempty"`
	Method string          `json:"method,omitempty"`
	Params json.RawMessage `json:"params,omitempty"`
	Result json.RawMessage `json:"result,omitempty"`
	Error  json.RawMessage `json:"error,omitempty"`
}

// reply is called from the reading goroutine with a response's result or
// error, so that a monitor's initial contents reach the cache before any
// update that follows them.
type reply func(result json.RawMessage, err error)

// conn is one JSON-RPC session with ovsdb-server.
type conn struct {
	nc       net.Conn
	wmu      sync.Mutex
	enc      *json.Encoder
	onUpdate func(params json.RawMessage)

	mu      sync.Mutex
	nextID  uint64
	pending map[uint64]reply
	err     error
	dead    chan struct{}
}

// dial connects to an endpoint as ovs-vsctl's --db spells it:
// "unix:/run/openvswitch/db.sock" or "tcp:127.0.0.1:6640".
func dial(ctx context.Context, endpoint string) (net.Conn, error) {
	network, addr, ok := strings.Cut(endpoint, ":")
	if !ok || (network != "unix" && network != "tcp") {
		return nil, fmt.Errorf("ovsdb endpoint %q: want unix:PATH or tcp:HOST:PORT", endpoint)
	}
	var d net.Dialer
	nc, err := d.DialContext(ctx, network, addr)
	if err != nil {
		return nil, fmt.Errorf("connect to ovsdb %s: %w", endpoint, err)
	}
	return nc, nil
}

func newConn(nc net.Conn, onUpdate func(json.RawMessage)) *conn {
	c := &conn{nc: nc, enc: json.NewEncoder(nc), onUpdate: onUpdate,
		pending: map[uint64]reply{}, dead: make(chan struct{})}
	go c.read()
	return c
}

func (c *conn) close(err error) {
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		return
	}
	c.err = err
	pending := c.pending
	c.pending = nil
	close(c.dead)
	c.mu.Unlock()
	_ = c.nc.Close()
	for _, r := range pending {
		r(nil, err)
	}
}

func (c *conn) read() {
	dec := json.NewDecoder(c.nc)
	for {
		var m message
		if err := dec.Decode(&m); err != nil {
			c.close(fmt.Errorf("ovsdb connection lost: %w", err))
			return
		}
		c.dispatch(m)
	}
}

func (c *conn) dispatch(m message) {
	switch m.Method {
	case "echo": // the server's keepalive: answer with its params
		_ = c.send(message{ID: m.ID, Result: m.Params, Error: json.RawMessage("null")})
	case "update":
		c.onUpdate(m.Params)
	case "":
		var id uint64
		if json.Unmarshal(m.ID, &id) != nil {
			return
		}
		c.mu.Lock()
		r := c.pending[id]
		delete(c.pending, id)
		c.mu.Unlock()
		if r == nil {
			return
		}
		if len(m.Error) > 0 && string(m.Error) != "null" {
			r(nil, fmt.Errorf("ovsdb error: %s", m.Error))
			return
		}
		r(m.Result, nil)
	}
}

func (c *conn) send(m message) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	return c.enc.Encode(m)
}

// start sends a request whose answer goes to r.
func (c *conn) start(method string, params any, r reply) error {
	p, err := json.Marshal(params)
	if err != nil {
		return fmt.Errorf("encode %s: %w", method, err)
	}
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		return c.err
	}
	c.nextID++
	id := c.nextID
	c.pending[id] = r
	c.mu.Unlock()
	if err := c.send(message{ID: json.RawMessage(fmt.Sprint(id)), Method: method, Params: p}); err != nil {
		c.close(fmt.Errorf("ovsdb send: %w", err))
		return err
	}
	return nil
}

// call sends a request and waits for its result. A request that ctx gives
// up on may still be carried out by the server.
func (c *conn) call(ctx context.Context, method string, params any) (json.RawMessage, error) {
	type answer struct {
		res json.RawMessage
		err error
	}
	ch := make(chan answer, 1)
	err := c.start(method, params, func(res json.RawMessage, err error) { ch <- answer{res, err} })
	if err != nil {
		return nil, err
	}
	select {
	case a := <-ch:
		return a.res, a.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

var errClosed = errors.New("ovsdb client closed")
