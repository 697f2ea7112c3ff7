package neutron

import (
	"sync"
	"time"
)

// UnclearSettle is how long after a create whose outcome is unknown kuryr
// keeps looking for what it may have created before creating it again:
// Neutron may still be committing a request its client gave up on.
const UnclearSettle = 5 * time.Second

// Unanswered remembers, by key (a pod, a node), the creates Neutron may
// have committed without answering (Unclear errors). Their owner looks up
// what they made by its tags before creating again, and keeps looking for
// UnclearSettle. The zero value is ready to use.
type Unanswered struct {
	mu    sync.Mutex
	since map[string]time.Time
	// Now is the clock (time.Now when nil), for tests.
	Now func() time.Time
	// Settle overrides UnclearSettle (0: UnclearSettle), for services
	// slower to commit than Neutron.
	Settle time.Duration
}

func (u *Unanswered) settle() time.Duration {
	if u.Settle > 0 {
		return u.Settle
	}
	return UnclearSettle
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
	return true, max(0, u.settle()-u.now().Sub(t))
}

// Clear forgets key: its port was found, or nothing was and the settle time
// is over, or its owner is gone.
func (u *Unanswered) Clear(key string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	delete(u.since, key)
}
