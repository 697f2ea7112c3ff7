package loadbalancer

import (
	"sync"
	"time"
)

// maxRepeats: a step applied this many times in a row without Octavia
// showing its effect is retried with the queue's backoff, and said.
const maxRepeats = 3

// progress remembers, per Service, the last step applied and how often in
// a row, and how long its load balancer has been PENDING, so that a load
// balancer that does not converge is retried ever more slowly instead of
// every second forever.
type progress struct {
	mu  sync.Mutex
	by  map[string]*tries
	now func() time.Time // nil: time.Now
	// settled is when a load balancer of any Service was last seen to
	// settle (ACTIVE, no child PENDING_*) after being PENDING: the
	// provider was working then.
	settled time.Time
}

func (p *progress) clock() time.Time {
	if p.now != nil {
		return p.now()
	}
	return time.Now()
}

type tries struct {
	step         string
	repeats      int
	pendingSince time.Time
	stuckSince   time.Time // a child PENDING_* under an ACTIVE load balancer
	stuckChild   string    // which, and in which state
	stuckFirst   time.Time // the first such look (stuckMax counts from it)
	deletedSince time.Time // kuryr's first delete of the Service's load balancers
	goneSince    time.Time // when none was listed any more
	echo         *echo     // the last write, until Octavia shows it
}

func (p *progress) get(uid string) *tries {
	if p.by == nil {
		p.by = map[string]*tries{}
	}
	t, ok := p.by[uid]
	if !ok {
		t = &tries{}
		p.by[uid] = t
	}
	return t
}

// applied records a step about to be applied and returns how many times in
// a row it has been.
func (p *progress) applied(uid, step string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	t := p.get(uid)
	t.pendingSince, t.stuckSince, t.stuckChild, t.stuckFirst = time.Time{}, time.Time{}, "", time.Time{}
	t.echo = nil // a new write supersedes the last
	if t.step == step {
		t.repeats++
	} else {
		t.step, t.repeats = step, 1
	}
	return t.repeats
}

// stuck returns how long a Service's load balancer has shown child
// PENDING_* while ACTIVE itself, counted from the first such look since a
// step was last applied or another child was the pending one (a child
// that settled is the provider's progress).
func (p *progress) stuck(uid, child string) (d, total time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	t := p.get(uid)
	if t.stuckFirst.IsZero() {
		t.stuckFirst = p.clock()
	}
	if t.stuckChild != child {
		if t.stuckChild != "" {
			p.settled = p.clock()
		}
		t.stuckChild, t.stuckSince = child, p.clock()
	}
	return p.clock().Sub(t.stuckSince), p.clock().Sub(t.stuckFirst)
}

// settle records that the Service's load balancer is ACTIVE with every
// child settled; if it was PENDING before, the provider made progress now.
func (p *progress) settle(uid string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	t := p.get(uid)
	if !t.pendingSince.IsZero() || !t.stuckSince.IsZero() {
		t.pendingSince, t.stuckSince, t.stuckChild, t.stuckFirst = time.Time{}, time.Time{}, "", time.Time{}
		p.settled = p.clock()
	}
}

// idle is how long no load balancer has been seen to settle (since the
// process started looking, when none has).
func (p *progress) idle() time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.settled.IsZero() {
		p.settled = p.clock()
	}
	return p.clock().Sub(p.settled)
}

// since returns how long ago the moment at(t) of a Service was, set to now
// the first time.
func (p *progress) since(uid string, at func(*tries) *time.Time) time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	m := at(p.get(uid))
	if m.IsZero() {
		*m = p.clock()
	}
	return p.clock().Sub(*m)
}

// deleted returns how long ago kuryr first deleted the Service's load
// balancers (0 the first time).
func (p *progress) deleted(uid string) time.Duration {
	return p.since(uid, func(t *tries) *time.Time { return &t.deletedSince })
}

// deletedDone forgets when kuryr first deleted the Service's load
// balancers: none is listed any more.
func (p *progress) deletedDone(uid string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if t, ok := p.by[uid]; ok && !t.deletedSince.IsZero() {
		t.deletedSince = time.Time{}
		p.settled = p.clock() // a delete the provider finished is progress too
	}
}

// refused records that the step last applied failed: only steps Octavia
// accepted, and then did not show, count as repeats.
func (p *progress) refused(uid string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.get(uid).repeats = 0
}

// pending returns when to look again at a PENDING load balancer: every
// 250 ms for 2 s (the ovn provider applies a lone change in about 0.7 s,
// and the next change of the load balancer waits for this look), every
// second until 30 s (a burst of changes keeps the provider busy that
// long), every 5 s until two minutes, then every 30 s.
func (p *progress) pending(uid string) time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	t := p.get(uid)
	if t.pendingSince.IsZero() {
		t.pendingSince = time.Now()
	}
	switch d := time.Since(t.pendingSince); {
	case d < 2*time.Second:
		return 250 * time.Millisecond
	case d < 30*time.Second:
		return time.Second
	case d < 2*time.Minute:
		return 5 * time.Second
	}
	return 30 * time.Second
}

// done forgets a Service that converged or is gone.
func (p *progress) done(uid string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.by, uid)
}

// gone returns how long none of the Service's load balancers has been
// listed (0 the first time).
func (p *progress) gone(uid string) time.Duration {
	return p.since(uid, func(t *tries) *time.Time { return &t.goneSince })
}

// notGone records that Octavia lists one of the Service's load balancers.
func (p *progress) notGone(uid string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.get(uid).goneSince = time.Time{}
}

// hasEcho says whether a write to the Service's load balancer may not be
// shown yet (at most echoMax after it).
func (p *progress) hasEcho(uid string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	t, ok := p.by[uid]
	if ok && t.echo != nil && p.clock().Sub(t.echo.sentAt) >= echoMax {
		t.echo = nil
	}
	return ok && t.echo != nil
}
