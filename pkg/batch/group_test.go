package batch

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"
)

var (
	errRefused     = errors.New("refused as a whole")
	errUnavailable = errors.New("no answer")
)

// gated records the calls it gets; the first one waits for open, so that
// later callers queue up behind it.
type gated struct {
	mu      sync.Mutex
	bulks   [][]string
	singles []string
	open    chan struct{}
	first   sync.Once
	bulkErr error
	oneErr  map[string]error
}

func (g *gated) wait() { g.first.Do(func() { <-g.open }) }

func (g *gated) bulk(_ context.Context, items []string) ([]string, error) {
	g.wait()
	g.mu.Lock()
	defer g.mu.Unlock()
	g.bulks = append(g.bulks, items)
	if g.bulkErr != nil {
		return nil, g.bulkErr
	}
	out := make([]string, len(items))
	for i, it := range items {
		out[i] = "done-" + it
	}
	return out, nil
}

func (g *gated) one(_ context.Context, item string) (string, error) {
	g.wait()
	g.mu.Lock()
	defer g.mu.Unlock()
	g.singles = append(g.singles, item)
	if err := g.oneErr[item]; err != nil {
		return "", err
	}
	return "done-" + item, nil
}

func (g *gated) group(inFlight int) *Group[string, string] {
	return New(inFlight, 50, g.bulk, g.one, func(err error) bool { return errors.Is(err, errRefused) })
}

type result struct {
	res string
	err error
}

// burst asks for n items: the first alone, the others while it is in flight.
func burst(t *testing.T, g *Group[string, string], gate *gated, n int) map[string]result {
	t.Helper()
	var mu sync.Mutex
	got := map[string]result{}
	var wg sync.WaitGroup
	ask := func(item string) {
		defer wg.Done()
		r, err := g.Do(context.Background(), item)
		mu.Lock()
		got[item] = result{r, err}
		mu.Unlock()
	}
	wg.Add(1)
	go ask("p0")
	waitFor(t, func() bool { return g.state() == [2]int{0, 1} })
	for i := 1; i < n; i++ {
		wg.Add(1)
		go ask(fmt.Sprintf("p%d", i))
	}
	waitFor(t, func() bool { return g.state() == [2]int{n - 1, 1} })
	close(gate.open)
	wg.Wait()
	return got
}

// state is (queued, in flight).
func (g *Group[T, R]) state() [2]int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return [2]int{len(g.queue), g.sending}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for i := 0; i < 5000; i++ {
		if cond() {
			return
		}
		time.Sleep(time.Millisecond)
	}
	t.Fatal("condition not reached in 5 s")
}

func TestGroup(t *testing.T) {
	cases := []struct {
		name        string
		bulkErr     error
		oneErr      map[string]error
		wantSingles int // including the first, lone call
		wantErrs    map[string]error
	}{
		{name: "items asked for during a call go together in the next", wantSingles: 1},
		{name: "a refused bulk is retried item by item, each with its own answer",
			bulkErr: errRefused, oneErr: map[string]error{"p3": errRefused}, wantSingles: 1 + 5,
			wantErrs: map[string]error{"p3": errRefused}},
		{name: "an unanswered bulk fails every item and is not retried",
			bulkErr: errUnavailable, wantSingles: 1,
			wantErrs: map[string]error{"p1": errUnavailable, "p2": errUnavailable, "p3": errUnavailable, "p4": errUnavailable, "p5": errUnavailable}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			gate := &gated{open: make(chan struct{}), bulkErr: tc.bulkErr, oneErr: tc.oneErr}
			got := burst(t, gate.group(1), gate, 6)
			if len(gate.bulks) != 1 || len(gate.bulks[0]) != 5 || len(gate.singles) != tc.wantSingles {
				t.Fatalf("bulks %v singles %v; want one bulk of 5, %d single(s)", gate.bulks, gate.singles, tc.wantSingles)
			}
			for item, r := range got {
				want := tc.wantErrs[item]
				if !errors.Is(r.err, want) || (want == nil) != (r.err == nil) {
					t.Errorf("%s: err %v, want %v", item, r.err, want)
				}
				if want == nil && r.res != "done-"+item {
					t.Errorf("%s: got %q, want its own result", item, r.res)
				}
			}
		})
	}
}

func TestGroupSharesABurstAmongFreeSlots(t *testing.T) {
	gate := &gated{open: make(chan struct{})}
	g := gate.group(2)
	g.mu.Lock()
	g.sending = 2 // both slots busy: the burst queues up
	g.mu.Unlock()
	var wg sync.WaitGroup
	for i := 0; i < 10; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := g.Do(context.Background(), fmt.Sprint(i)); err != nil {
				t.Error(err)
			}
		}()
	}
	waitFor(t, func() bool { return g.state() == [2]int{10, 2} })
	g.mu.Lock()
	g.sending = 0
	g.mu.Unlock()
	g.pump() // both calls start and wait at the gate: none ends meanwhile
	close(gate.open)
	wg.Wait()
	if len(gate.bulks) != 2 || len(gate.bulks[0]) != 5 || len(gate.bulks[1]) != 5 {
		t.Fatalf("bulks %v, want two of 5", gate.bulks)
	}
}

func TestGroupDropsCancelledCallers(t *testing.T) {
	gate := &gated{open: make(chan struct{})}
	close(gate.open)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := gate.group(1).Do(ctx, "gone"); !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v, want context.Canceled", err)
	}
	if len(gate.singles)+len(gate.bulks) != 0 {
		t.Fatalf("a call was made for a cancelled caller: %v %v", gate.singles, gate.bulks)
	}
}

// A paced Group sizes its calls by the server's shown pace: slow answers
// shrink the next calls at once, fast ones grow them back gradually.
func TestPacedLimit(t *testing.T) {
	steps := []struct {
		took  time.Duration
		items int // negative: the call timed out
		want  int
	}{
		{0, 0, 50},                 // 10 s / 0.2 s = 50, capped at maxBatch 50
		{20 * time.Second, 10, 5},  // 2 s per item, believed at once: 5
		{10 * time.Second, 10, 5},  // faster (1 s), weighs less: 5
		{1 * time.Second, 10, 7},   // much faster (0.1 s): grown back slowly
		{5 * time.Second, -10, 7},  // a timeout, at 0.5 s per item less than shown: no change
		{40 * time.Second, -10, 3}, // a timeout at 4 s per item: at least that
	}
	g := pacedGroup(10*time.Second, 200*time.Millisecond)
	for i, s := range steps {
		record(g, s.took, s.items)
		if got := g.Limit(); got != s.want {
			fixed, per := g.pace.Line()
			t.Errorf("step %d: limit %d, want %d (line %s + %s per item)", i, got, s.want, fixed, per)
		}
	}
}

// A busy server's calls take a fixed time plus a time per item. Calls of
// varied sizes separate the two, and the calls grow to fill the budget
// (no further than twice the biggest seen within it), where an average
// per item would keep them small.
func TestPacedLineSeparatesFixedTime(t *testing.T) {
	g := pacedGroup(15*time.Second, 300*time.Millisecond)
	took := func(n int) time.Duration { return 6*time.Second + time.Duration(n)*900*time.Millisecond }
	for range 3 {
		for _, n := range []int{4, 2, 6, 3, 5} {
			record(g, took(n), n)
		}
	}
	// (15 s - 6 s) / 0.9 s = 10, a little less: calls slower than the line
	// weigh more.
	if got := g.Limit(); got != 9 {
		fixed, per := g.pace.Line()
		t.Errorf("limit %d, want 9 (line %s + %s per item)", got, fixed, per)
	}
	for _, n := range []int{9, 8, 9} {
		record(g, took(n), n)
	}
	if got := g.Limit(); got != 9 {
		t.Errorf("limit %d after calls of 9 within 15 s, want 9", got)
	}
	// Past twice the biggest call seen within the budget, the line is not
	// trusted: a server whose time per item seems tiny gets calls that
	// double, not a jump to maxBatch.
	k := pacedGroup(15*time.Second, 300*time.Millisecond)
	for _, n := range []int{2, 3, 2, 3} {
		record(k, 5*time.Second+time.Duration(n)*10*time.Millisecond, n)
	}
	if got := k.Limit(); got != 6 {
		fixed, per := k.pace.Line()
		t.Errorf("limit %d, want 6: twice the biggest call (line %s + %s per item)", got, fixed, per)
	}
	// The same calls, each of one size: nothing to separate, and the
	// average per item (2.4 s at 4) allows 6.
	h := pacedGroup(15*time.Second, 300*time.Millisecond)
	for range 10 {
		record(h, took(4), 4)
	}
	if got := h.Limit(); got != 6 {
		t.Errorf("calls of one size: limit %d, want 6", got)
	}
}

func pacedGroup(budget, perItem time.Duration) *Group[int, int] {
	return New(1, 50, func(context.Context, []int) ([]int, error) { return nil, nil },
		func(context.Context, int) (int, error) { return 0, nil }, func(error) bool { return false }).
		Paced(budget, perItem)
}

func record(g *Group[int, int], took time.Duration, items int) {
	switch {
	case items > 0:
		g.pace.observe(took, items)
	case items < 0:
		g.pace.atLeast(took, -items)
	}
}
