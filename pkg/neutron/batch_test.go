package neutron

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
)

// gatedNeutron records the requests it gets; the first one waits for open,
// so that later callers queue up behind it.
type gatedNeutron struct {
	mu      sync.Mutex
	bulks   [][]string // names per bulk request
	singles []string
	open    chan struct{}
	first   sync.Once
	bulkErr error
	oneErr  map[string]error
}

func (g *gatedNeutron) wait() { g.first.Do(func() { <-g.open }) }

func (g *gatedNeutron) CreatePorts(_ context.Context, specs []PortSpec) ([]Port, error) {
	g.wait()
	g.mu.Lock()
	defer g.mu.Unlock()
	var names []string
	out := make([]Port, len(specs))
	for i, s := range specs {
		names = append(names, s.Name)
		out[i].ID, out[i].Name = "id-"+s.Name, s.Name
	}
	g.bulks = append(g.bulks, names)
	if g.bulkErr != nil {
		return nil, g.bulkErr
	}
	return out, nil
}

func (g *gatedNeutron) CreatePort(_ context.Context, s PortSpec) (*Port, error) {
	g.wait()
	g.mu.Lock()
	defer g.mu.Unlock()
	g.singles = append(g.singles, s.Name)
	if err := g.oneErr[s.Name]; err != nil {
		return nil, err
	}
	return &Port{Port: ports.Port{ID: "id-" + s.Name, Name: s.Name}}, nil
}

type result struct {
	port *Port
	err  error
}

// burst asks for n ports: the first alone, the others while it is in flight.
func burst(t *testing.T, b *Batcher, g *gatedNeutron, ctx context.Context, n int) map[string]result {
	t.Helper()
	var mu sync.Mutex
	got := map[string]result{}
	var wg sync.WaitGroup
	ask := func(name string) {
		defer wg.Done()
		p, err := b.CreatePort(ctx, PortSpec{Name: name})
		mu.Lock()
		got[name] = result{p, err}
		mu.Unlock()
	}
	wg.Add(1)
	go ask("p0")
	waitFor(t, func() bool { return b.inFlightNow() == 1 && b.queued() == 0 })
	for i := 1; i < n; i++ {
		wg.Add(1)
		go ask(fmt.Sprintf("p%d", i))
	}
	waitFor(t, func() bool { return b.queued() == n-1 })
	close(g.open)
	wg.Wait()
	return got
}

func (b *Batcher) queued() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.queue)
}

func (b *Batcher) inFlightNow() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.sending
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

func TestBatcher(t *testing.T) {
	refused := gophercloud.ErrUnexpectedResponseCode{Actual: http.StatusConflict, Body: []byte("IpAddressGenerationFailure")}
	unavailable := gophercloud.ErrUnexpectedResponseCode{Actual: http.StatusServiceUnavailable}
	cases := []struct {
		name        string
		bulkErr     error
		oneErr      map[string]error
		wantBulks   int
		wantSingles int // including the first, lone request
		wantErrs    map[string]error
	}{
		{name: "ports asked for during a request go together in the next", wantBulks: 1, wantSingles: 1},
		{name: "a refused bulk is retried port by port, each with its own answer",
			bulkErr: refused, oneErr: map[string]error{"p3": refused}, wantBulks: 1, wantSingles: 1 + 5,
			wantErrs: map[string]error{"p3": refused}},
		{name: "an unanswered bulk fails every port and is not retried here",
			bulkErr: unavailable, wantBulks: 1, wantSingles: 1,
			wantErrs: map[string]error{"p1": unavailable, "p2": unavailable, "p3": unavailable, "p4": unavailable, "p5": unavailable}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := &gatedNeutron{open: make(chan struct{}), bulkErr: tc.bulkErr, oneErr: tc.oneErr}
			b := NewBatcher(g, 1, 50)
			got := burst(t, b, g, context.Background(), 6)
			if len(g.bulks) != tc.wantBulks || len(g.singles) != tc.wantSingles {
				t.Fatalf("bulks %v singles %v; want %d bulk(s), %d single(s)", g.bulks, g.singles, tc.wantBulks, tc.wantSingles)
			}
			for name, r := range got {
				want := tc.wantErrs[name]
				if (want == nil) != (r.err == nil) || Classify(r.err) != Classify(want) {
					t.Errorf("%s: err %v, want %v", name, r.err, want)
				}
				if want == nil && (r.port == nil || r.port.Name != name) {
					t.Errorf("%s: got port %+v, want its own", name, r.port)
				}
			}
		})
	}
}

func TestBatcherSharesABurstAmongFreeSlots(t *testing.T) {
	g := &gatedNeutron{open: make(chan struct{})}
	b := NewBatcher(g, 2, 50)
	// Both slots busy with single ports would hide the split; fill the
	// queue before any request starts instead.
	b.mu.Lock()
	b.sending = 2
	b.mu.Unlock()
	var wg sync.WaitGroup
	for i := 0; i < 10; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := b.CreatePort(context.Background(), PortSpec{Name: fmt.Sprint(i)}); err != nil {
				t.Error(err)
			}
		}()
	}
	waitFor(t, func() bool { return b.queued() == 10 })
	b.mu.Lock()
	b.sending = 0
	b.mu.Unlock()
	close(g.open)
	b.pump()
	wg.Wait()
	if len(g.bulks) != 2 || len(g.bulks[0]) != 5 || len(g.bulks[1]) != 5 {
		t.Fatalf("bulks %v, want two of 5", g.bulks)
	}
}

func TestBatcherDropsCancelledCallers(t *testing.T) {
	g := &gatedNeutron{open: make(chan struct{})}
	b := NewBatcher(g, 1, 50)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	close(g.open)
	if _, err := b.CreatePort(ctx, PortSpec{Name: "gone"}); !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v, want context.Canceled", err)
	}
	if len(g.singles)+len(g.bulks) != 0 {
		t.Fatalf("a request was sent for a cancelled caller: %v %v", g.singles, g.bulks)
	}
}
