package nested

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"

	"github.com/kuryr-k8s/kuryr/pkg/neutron"
)

// fakeVMPort is one VM port's pairs as Neutron keeps them: each update
// needs the current revision (412 otherwise) and bumps it; more pairs than
// max is a 400 (Neutron's max_allowed_address_pair). The first read waits
// for hold to be closed, when hold is set.
type fakeVMPort struct {
	mu       sync.Mutex
	pairs    []ports.AddressPair
	revision int
	max      int
	sets     int
	hold     chan struct{}
	held     bool
	reads    int
	panicOn  int // the read that panics (0: none)
}

func (f *fakeVMPort) GetParentPort(context.Context, string) (*neutron.ParentPort, error) {
	f.mu.Lock()
	hold := f.hold
	if f.held {
		hold = nil
	}
	f.held = true
	f.mu.Unlock()
	if hold != nil {
		<-hold
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.reads++; f.reads == f.panicOn {
		panic("read failed")
	}
	p := &neutron.ParentPort{}
	p.AllowedAddressPairs = append([]ports.AddressPair{}, f.pairs...)
	p.RevisionNumber = f.revision
	return p, nil
}

func (f *fakeVMPort) SetAddressPairs(_ context.Context, _ string, pairs []ports.AddressPair, revision int) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sets++
	if revision != f.revision {
		return gophercloud.ErrUnexpectedResponseCode{Actual: http.StatusPreconditionFailed}
	}
	if f.max > 0 && len(pairs) > f.max {
		return gophercloud.ErrUnexpectedResponseCode{Actual: http.StatusBadRequest, Body: []byte("AllowedAddressPairExhausted")}
	}
	f.pairs, f.revision = append([]ports.AddressPair{}, pairs...), f.revision+1
	return nil
}

// changeWhileWriting makes the changes at once, the first while the
// port's first read is held, the others queued behind it; it returns each
// change's error.
func changeWhileWriting(t *testing.T, f *fakeVMPort, p *Pairs, changes ...func() error) []error {
	t.Helper()
	f.hold = make(chan struct{})
	errs := make([]error, len(changes))
	var wg sync.WaitGroup
	run := func(i int) {
		defer wg.Done()
		defer func() {
			if r := recover(); r != nil {
				errs[i] = fmt.Errorf("panic: %v", r)
			}
		}()
		errs[i] = changes[i]()
	}
	wg.Add(1)
	go run(0)
	waitFor(t, func() bool { f.mu.Lock(); defer f.mu.Unlock(); return f.held })
	for i := 1; i < len(changes); i++ {
		wg.Add(1)
		go run(i)
	}
	waitFor(t, func() bool { return p.queued("vm-port") == len(changes)-1 })
	close(f.hold)
	wg.Wait()
	return errs
}

func pairN(i int) ports.AddressPair {
	return ports.AddressPair{IPAddress: fmt.Sprintf("10.10.0.%d", 10+i), MACAddress: MacvlanMAC(fmt.Sprint(i))}
}

func adding(p *Pairs, i int) func() error {
	return func() error { return p.Add(context.Background(), "vm-port", []ports.AddressPair{pairN(i)}) }
}

func removing(p *Pairs, i int) func() error {
	return func() error { return p.Remove(context.Background(), "vm-port", []ports.AddressPair{pairN(i)}) }
}

// addWhileWriting adds n pairs at once (changeWhileWriting).
func addWhileWriting(t *testing.T, f *fakeVMPort, p *Pairs, n int) []error {
	t.Helper()
	var changes []func() error
	for i := range n {
		changes = append(changes, adding(p, i))
	}
	return changeWhileWriting(t, f, p, changes...)
}

func (p *Pairs) queued(parent string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if b := p.next[parent]; b != nil {
		return len(b.edits)
	}
	return 0
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("timed out")
		}
	}
}

// Pairs of pods placed on one VM while its port is being written go
// together in the next update: 10 pods, 2 updates.
func TestPairsBatched(t *testing.T) {
	f := &fakeVMPort{}
	p := &Pairs{Neutron: f, Attempts: 3}
	for i, err := range addWhileWriting(t, f, p, 10) {
		if err != nil {
			t.Errorf("add %d: %v", i, err)
		}
	}
	if len(f.pairs) != 10 || f.sets != 2 {
		t.Errorf("%d pairs in %d updates, want 10 in 2", len(f.pairs), f.sets)
	}
}

// A batch Neutron refuses as a whole (more pairs than the port may hold)
// is written one change at a time: those that fit are made, the others
// get Neutron's refusal.
func TestPairsBatchRefusedWrittenOneByOne(t *testing.T) {
	f := &fakeVMPort{max: 3}
	p := &Pairs{Neutron: f, Attempts: 3}
	refused := 0
	for _, err := range addWhileWriting(t, f, p, 6) {
		if neutron.BadRequest(err) {
			refused++
		} else if err != nil {
			t.Errorf("unexpected error: %v", err)
		}
	}
	if len(f.pairs) != 3 || refused != 3 {
		t.Errorf("%d pairs made and %d refused, want 3 and 3", len(f.pairs), refused)
	}
}

// In a batch refused as a whole, removals are written first: they make
// room for the additions (here one more than without).
func TestPairsBatchRefusedRemovalsFirst(t *testing.T) {
	f := &fakeVMPort{max: 3, pairs: []ports.AddressPair{pairN(7), pairN(8)}}
	p := &Pairs{Neutron: f, Attempts: 3}
	errs := changeWhileWriting(t, f, p, adding(p, 0), adding(p, 1), adding(p, 2), removing(p, 7))
	// The batch's two additions go in the order they queued: one is made.
	if errs[0] != nil || errs[3] != nil || (errs[1] == nil) == (errs[2] == nil) ||
		!neutron.BadRequest(errors.Join(errs[1], errs[2])) {
		t.Errorf("errors %v, want one of the batch's additions refused", errs)
	}
	if len(f.pairs) != 3 || slices.Contains(f.pairs, pairN(7)) || !slices.Contains(f.pairs, pairN(8)) {
		t.Errorf("pairs %v, want 8, 0 and one of 1 and 2", f.pairs)
	}
}

// A write that panics fails its batch's changes (none waits forever) and
// leaves the port's later changes free to go.
func TestPairsPanicFailsItsBatchOnly(t *testing.T) {
	f := &fakeVMPort{}
	p := &Pairs{Neutron: f, Attempts: 3}
	f.panicOn = 2 // the second batch's read
	done := make(chan []error)
	go func() { done <- changeWhileWriting(t, f, p, adding(p, 0), adding(p, 1), adding(p, 2)) }()
	select {
	case errs := <-done:
		if errs[0] != nil || errs[1] == nil || errs[2] == nil {
			t.Errorf("errors %v, want the second batch's changes failed", errs)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a change of a panicked write's batch waits forever")
	}
	if err := adding(p, 3)(); err != nil || !slices.Contains(f.pairs, pairN(3)) {
		t.Errorf("a change after the panic: %v, pairs %v", err, f.pairs)
	}
}
