package nested

import (
	"context"
	"fmt"
	"net/http"
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

// addWhileWriting adds n pairs to the port at once, the first while the
// port's first read is held, the others queued behind it; it returns each
// Add's error.
func addWhileWriting(t *testing.T, f *fakeVMPort, p *Pairs, n int) []error {
	t.Helper()
	f.hold = make(chan struct{})
	errs := make([]error, n)
	var wg sync.WaitGroup
	add := func(i int) {
		defer wg.Done()
		pair := ports.AddressPair{IPAddress: fmt.Sprintf("10.10.0.%d", 10+i), MACAddress: MacvlanMAC(fmt.Sprint(i))}
		errs[i] = p.Add(context.Background(), "vm-port", []ports.AddressPair{pair})
	}
	wg.Add(1)
	go add(0)
	waitFor(t, func() bool { f.mu.Lock(); defer f.mu.Unlock(); return f.held })
	for i := 1; i < n; i++ {
		wg.Add(1)
		go add(i)
	}
	waitFor(t, func() bool { return p.queued("vm-port") == n-1 })
	close(f.hold)
	wg.Wait()
	return errs
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
