package batch

import (
	"sync"
	"time"
)

// pace sizes bulk calls by how long the server takes per item: a bulk that
// runs past its client's time bound may still commit, and each such call
// costs look-ups and leaves duplicates for a sweep. It keeps an average of
// the time per item of the calls that succeeded (slow calls weigh more than
// fast ones: an overloaded server is believed at once, a recovered one
// gradually) and allows as many items as fit in the budget at that pace.
type pace struct {
	budget time.Duration

	mu      sync.Mutex
	perItem time.Duration
}

func newPace(budget, initialPerItem time.Duration) *pace {
	return &pace{budget: budget, perItem: max(initialPerItem, time.Millisecond)}
}

// limit is how many items fit in the budget, at least 1.
func (p *pace) limit() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return max(1, int(p.budget/p.perItem))
}

// observe records a successful call of n items that took d. (A call of
// one item counts the server's fixed overhead as the item's: the estimate
// errs towards smaller calls.)
func (p *pace) observe(d time.Duration, n int) { p.record(d, n, false) }

// atLeast records a call of n items that timed out after d: the server
// takes at least that long, so the estimate only grows.
func (p *pace) atLeast(d time.Duration, n int) { p.record(d, n, true) }

func (p *pace) record(d time.Duration, n int, lowerBound bool) {
	if n < 1 {
		return
	}
	per := d / time.Duration(n)
	p.mu.Lock()
	defer p.mu.Unlock()
	if lowerBound && per <= p.perItem {
		return
	}
	if per > p.perItem {
		p.perItem = (p.perItem + 3*per) / 4
	} else {
		p.perItem = (7*p.perItem + per) / 8
	}
	p.perItem = max(p.perItem, time.Millisecond)
}

// PerItem is the current estimate of the server's time per item.
func (p *pace) PerItem() time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.perItem
}
