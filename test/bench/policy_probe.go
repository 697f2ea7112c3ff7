package main

import (
	"context"
	"fmt"
	"net"
	"time"

	"github.com/containernetworking/plugins/pkg/ns"
	corev1 "k8s.io/api/core/v1"

	"github.com/kuryr-k8s/kuryr/test/e2e/framework"
)

// Probing a path: the bench itself connects over TCP from inside the
// client pod's network namespace (so from the pod's address, through its
// port and security groups) to the server pod, starting a connect every
// flipEvery without waiting for the previous one. A connect that does not
// complete within flipTimeout is a denied one (OVN drops, never rejects).
// A flip is seen when flipStable connects in a row, all started after
// the change was asked for, show the new state; its time is the start of
// the first of them. The bench and the pods share the machine's clock.
const (
	flipEvery   = 50 * time.Millisecond
	flipTimeout = 250 * time.Millisecond
	flipStable  = 4
	flipWithin  = 30 * time.Second
)

// path is client pod -> server pod, TCP 8080.
type path struct {
	name  string
	netns ns.NetNS
	addr  string
}

// attempt is one connect, in the order they were started.
type attempt struct {
	start time.Time
	ok    chan bool // buffered: a connect never waits for its reader
}

// newPath finds the client pod's network namespace: the cni-* namespace
// holding the pod's address.
func newPath(client, server *corev1.Pod) (*path, error) {
	n, err := framework.PodNetns(client.Status.PodIP)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", client.Name, err)
	}
	return &path{name: client.Name + " -> " + server.Name, netns: n,
		addr: net.JoinHostPort(server.Status.PodIP, "8080")}, nil
}

func (p *path) close() { p.netns.Close() }

func (p *path) connects() bool {
	ctx, cancel := context.WithTimeout(context.Background(), flipTimeout)
	defer cancel()
	c, err := framework.DialIn(p.netns)(ctx, "tcp", p.addr)
	if err != nil {
		return false
	}
	c.Close()
	return true
}

// watch starts a connect every flipEvery until stop is called; the
// attempts come out in the order they were started.
func (p *path) watch() (<-chan attempt, func()) {
	out := make(chan attempt, 4096) // over three minutes of attempts
	done := make(chan struct{})
	go func() {
		defer close(out)
		tick := time.NewTicker(flipEvery)
		defer tick.Stop()
		for {
			a := attempt{start: time.Now(), ok: make(chan bool, 1)}
			go func() { a.ok <- p.connects() }()
			select {
			case out <- a:
			default: // nobody has read for minutes: the run is failing anyway
			}
			select {
			case <-done:
				return
			case <-tick.C:
			}
		}
	}()
	return out, func() { close(done) }
}

// until reads attempts until flipStable in a row, all started at or after
// since, saw want; it returns the start of the first of them, or false at
// deadline.
func until(attempts <-chan attempt, want bool, since, deadline time.Time) (time.Time, bool) {
	var first time.Time
	run := 0
	for a := range attempts {
		if a.start.After(deadline) {
			return time.Time{}, false
		}
		if a.start.Before(since) {
			continue
		}
		if <-a.ok != want {
			run = 0
			continue
		}
		if run == 0 {
			first = a.start
		}
		if run++; run == flipStable {
			return first, true
		}
	}
	return time.Time{}, false
}

func state(open bool) string {
	if open {
		return "open"
	}
	return "closed"
}

// await waits until the path is steadily in state want.
func (p *path) await(want bool, within time.Duration) error {
	attempts, stop := p.watch()
	defer stop()
	if _, ok := until(attempts, want, time.Now(), time.Now().Add(within)); !ok {
		return fmt.Errorf("%s not steadily %s within %s", p.name, state(want), within)
	}
	return nil
}

// flip is one sample: it checks the path is steadily in the state it
// leaves, makes the change (write), and returns the time from the start
// of the write until the path is steadily in state want.
func (p *path) flip(want bool, write func() error) (time.Duration, error) {
	attempts, stop := p.watch()
	defer stop()
	if _, ok := until(attempts, !want, time.Now(), time.Now().Add(flipWithin)); !ok {
		return 0, fmt.Errorf("%s not steadily %s before the change (for %s)", p.name, state(!want), flipWithin)
	}
	t0 := time.Now()
	if err := write(); err != nil {
		return 0, err
	}
	at, ok := until(attempts, want, t0, t0.Add(flipWithin))
	if !ok {
		return 0, fmt.Errorf("%s still not %s %s after the change", p.name, state(want), flipWithin)
	}
	return at.Sub(t0), nil
}
