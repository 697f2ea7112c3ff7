//go:build e2e

package workload

import (
	"net"
	"sync"
	"time"

	"github.com/containernetworking/plugins/pkg/ns"
)

// prober asks a pod's HTTP server for its page from inside another pod's
// network namespace every `every`, and keeps the longest time between two
// answered requests: the longest the path was down.
type prober struct {
	name    string
	netns   ns.NetNS
	addr    string
	every   time.Duration
	timeout time.Duration

	mu       sync.Mutex
	last     time.Time // start of the last answered request
	maxGap   time.Duration
	gapAt    time.Time
	ok, fail int
	stop     chan struct{}
	done     chan struct{}
}

func newProber(name string, n ns.NetNS, addr string) *prober {
	return &prober{name: name, netns: n, addr: addr, every: 100 * time.Millisecond, timeout: 500 * time.Millisecond,
		stop: make(chan struct{}), done: make(chan struct{})}
}

func (p *prober) run() {
	defer close(p.done)
	tick := time.NewTicker(p.every)
	defer tick.Stop()
	for {
		select {
		case <-p.stop:
			return
		case <-tick.C:
			// One at a time: a hung request delays the next, and the gap
			// shows it.
			start := time.Now()
			p.record(start, p.ask())
		}
	}
}

func (p *prober) ask() bool {
	var answered bool
	_ = p.netns.Do(func(ns.NetNS) error {
		c, err := net.DialTimeout("tcp", p.addr, p.timeout)
		if err != nil {
			return err
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(p.timeout))
		if _, err := c.Write([]byte("GET / HTTP/1.0\r\n\r\n")); err != nil {
			return err
		}
		buf := make([]byte, 64)
		n, _ := c.Read(buf)
		answered = n > 0
		return nil
	})
	return answered
}

func (p *prober) record(start time.Time, ok bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !ok {
		p.fail++
		return
	}
	p.ok++
	if !p.last.IsZero() {
		if gap := start.Sub(p.last); gap > p.maxGap {
			p.maxGap, p.gapAt = gap, p.last
		}
	}
	p.last = start
}

// finish stops probing and returns the longest gap, counting the time
// since the last answer as one too.
func (p *prober) finish() (maxGap time.Duration, at time.Time, ok, fail int) {
	close(p.stop)
	<-p.done
	p.mu.Lock()
	defer p.mu.Unlock()
	if gap := time.Since(p.last); p.last.IsZero() || gap > p.maxGap {
		p.maxGap, p.gapAt = gap, p.last
	}
	return p.maxGap, p.gapAt, p.ok, p.fail
}
