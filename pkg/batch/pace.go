package batch

import (
	"sync"
	"time"
)

// pace sizes bulk calls by how long the server takes for them: a bulk that
// runs past its client's time bound may still commit, and each such call
// costs look-ups and leaves duplicates for a sweep. A call's time is a
// fixed part (the request, its transaction, a busy server's queue) plus a
// part per item; pace fits that line to the recent calls (least squares,
// older calls weighing less) and allows as many items as fit in the budget.
//
// A time per item averaged over small calls would count the fixed part
// into every item, allow smaller calls still, and so never learn that
// bigger ones pay: the fit separates the two parts as soon as the calls'
// sizes vary, which a burst's calls do. Until they have varied, the
// average is all there is, and it errs towards smaller calls. A call
// slower than the line weighs more than a faster one: an overloaded server
// is believed at once, a recovered one gradually.
type pace struct {
	budget time.Duration

	mu sync.Mutex
	// Decayed sums over the calls seen: weight, items, seconds, items²,
	// items × seconds.
	w, n, d, nn, nd float64
	// biggest is the most items of a call answered within the budget: a
	// fitted line is not trusted beyond twice that.
	biggest int
}

const (
	paceDecay = 0.875 // an older call's weight, per newer call
	paceSlow  = 3.0   // the weight of a call slower than the line
	// paceSpread is the least variance of the calls' sizes (items²) that
	// a slope is believed from.
	paceSpread = 1.0
)

func newPace(budget, initialPerItem time.Duration) *pace {
	p := &pace{budget: budget}
	// A guess, outweighed by the first call answered.
	p.add(1, max(initialPerItem, time.Millisecond).Seconds(), 0.01)
	return p
}

// line is the fitted time of a call: fixed + perItem × items, in seconds.
func (p *pace) line() (fixed, perItem float64) {
	mn, md := p.n/p.w, p.d/p.w
	if spread := p.nn/p.w - mn*mn; spread >= paceSpread {
		slope := (p.nd/p.w - mn*md) / spread
		fixed = md - slope*mn
		if slope > 0 && fixed >= 0 {
			return fixed, max(slope, 0.001)
		}
	}
	return 0, max(md/mn, 0.001) // the average: the fixed part in every item
}

// limit is how many items fit in the budget, at least 1.
func (p *pace) limit() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	fixed, perItem := p.line()
	n := max(1, int((p.budget.Seconds()-fixed)/perItem))
	if fixed > 0 {
		n = min(n, max(2*p.biggest, 2))
	}
	return n
}

// observe records a successful call of n items that took d.
func (p *pace) observe(d time.Duration, n int) { p.record(d, n, false) }

// atLeast records a call of n items that timed out after d: the server
// takes at least that long, so it counts only if slower than the line.
func (p *pace) atLeast(d time.Duration, n int) { p.record(d, n, true) }

func (p *pace) record(d time.Duration, n int, lowerBound bool) {
	if n < 1 {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	fixed, perItem := p.line()
	slow := d.Seconds() > fixed+perItem*float64(n)
	if lowerBound && !slow {
		return
	}
	weight := 1.0
	if slow {
		weight = paceSlow
	}
	p.add(float64(n), d.Seconds(), weight)
	if !lowerBound && d <= p.budget {
		p.biggest = max(p.biggest, n)
	}
}

func (p *pace) add(n, d, weight float64) {
	p.w, p.n, p.d, p.nn, p.nd = paceDecay*p.w+weight, paceDecay*p.n+weight*n,
		paceDecay*p.d+weight*d, paceDecay*p.nn+weight*n*n, paceDecay*p.nd+weight*n*d
}

// Line is the current fit: a call's fixed time and its time per item.
func (p *pace) Line() (fixed, perItem time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	f, i := p.line()
	return time.Duration(f * float64(time.Second)), time.Duration(i * float64(time.Second))
}
