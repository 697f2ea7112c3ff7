package openstack

import (
	"sync"
	"time"
)

// UnclearSettle is how long after a create whose outcome is unknown kuryr
// waits for what it may have created before creating it again: Neutron may
// still be committing a request its client gave up on.
const UnclearSettle = 5 * time.Second

// UnclearSettleMax bounds the settle time, which doubles each time a
// create for the same key goes unanswered again after nothing was found:
// an overloaded Neutron commits minutes late, and a create repeated every
// few seconds would only add duplicates to its queue (and fill the subnet).
const UnclearSettleMax = 2 * time.Minute

// Unanswered remembers, by key (a pod, a node), the creates Neutron may
// have committed without answering (Unclear errors). Their owner waits for
// the settle time, then looks up what they made by its tags before creating
// again. The zero value is ready to use.
type Unanswered struct {
	mu    sync.Mutex
	since map[string]time.Time
	// strikes counts, by key, the unanswered creates after which nothing
	// was found (GiveUp); each doubles the next settle time.
	strikes map[string]int
	// Now is the clock (time.Now when nil), for tests.
	Now func() time.Time
	// Settle overrides UnclearSettle (0: UnclearSettle), for services
	// slower to commit than Neutron.
	Settle time.Duration
}

// settle is key's settle time. Callers hold u.mu.
func (u *Unanswered) settle(key string) time.Duration {
	d := UnclearSettle
	if u.Settle > 0 {
		d = u.Settle
	}
	for i := 0; i < u.strikes[key] && d < UnclearSettleMax; i++ {
		d *= 2
	}
	return min(d, max(UnclearSettleMax, u.Settle))
}

func (u *Unanswered) now() time.Time {
	if u.Now != nil {
		return u.Now()
	}
	return time.Now()
}

// Mark records that a create for key went unanswered (the first time
// counts).
func (u *Unanswered) Mark(key string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.since == nil {
		u.since = map[string]time.Time{}
	}
	if _, ok := u.since[key]; !ok {
		u.since[key] = u.now()
	}
}

// Pending reports whether a create for key went unanswered and no lookup
// has settled it, and how much of the settle time is left (0: a lookup that
// finds nothing now settles it).
func (u *Unanswered) Pending(key string) (bool, time.Duration) {
	u.mu.Lock()
	defer u.mu.Unlock()
	t, ok := u.since[key]
	if !ok {
		return false, 0
	}
	return true, max(0, u.settle(key)-u.now().Sub(t))
}

// Clear forgets key: what it made was found, or its owner is gone.
func (u *Unanswered) Clear(key string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	delete(u.since, key)
	delete(u.strikes, key)
}

// GiveUp says that nothing was found once the settle time was over: the
// owner creates again, and should that create go unanswered too, waits
// twice as long before the next.
func (u *Unanswered) GiveUp(key string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if _, ok := u.since[key]; !ok {
		return
	}
	delete(u.since, key)
	if u.strikes == nil {
		u.strikes = map[string]int{}
	}
	u.strikes[key]++
}
