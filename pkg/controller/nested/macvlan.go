package nested

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"

	"github.com/kuryr-k8s/kuryr/pkg/keyedlock"
	"github.com/kuryr-k8s/kuryr/pkg/neutron"
)

// pairAPI reads a VM's port and rewrites its allowed address pairs.
type pairAPI interface {
	GetParentPort(ctx context.Context, id string) (*neutron.ParentPort, error)
	SetAddressPairs(ctx context.Context, portID string, pairs []ports.AddressPair, revision int) error
}

// Pairs adds pods' addresses to VMs' ports as allowed address pairs.
// Neutron replaces the whole list on an update, so each change is made at
// the revision it was computed from (If-Match): a writer that lost the
// race (another controller, a user) reads again instead of dropping the
// other's pairs. Changes to one VM port made at once are written together
// (a group commit): while one write of the port is under way, the changes
// that arrive wait and then go in one read and one update, so a burst of
// pods on a VM costs a few updates of its port, not one each.
type Pairs struct {
	Neutron pairAPI
	// Attempts bounds the re-reads after a revision conflict
	// ([pod_vif_nested] rev_update_attempts).
	Attempts int
	locks    keyedlock.Locks
	mu       sync.Mutex
	next     map[string]*pairBatch // per VM port, the changes waiting for its next write
}

// pairBatch is the changes waiting for one write of a VM port's pairs; done
// is closed once each has its outcome.
type pairBatch struct {
	edits []*pairEdit
	done  chan struct{}
}

type pairEdit struct {
	apply  func([]ports.AddressPair) []ports.AddressPair
	remove bool // takes pairs off only: it never makes the port hold more
	err    error
}

// errNotWritten is the outcome of a change whose batch's write ended
// without one (it panicked).
var errNotWritten = errors.New("the VM port's allowed address pairs were not written")

// Add makes each pair allowed on the VM's port (pairs already there are
// kept as they are).
func (p *Pairs) Add(ctx context.Context, parent string, add []ports.AddressPair) error {
	return p.change(ctx, parent, &pairEdit{apply: func(have []ports.AddressPair) []ports.AddressPair { return withPairs(have, add) }})
}

// Remove takes the given pairs off the VM's port: only a pair with the
// same address and MAC, so that a late Remove for a port whose address was
// since given to another pod's (another MAC) leaves the new pair alone.
func (p *Pairs) Remove(ctx context.Context, parent string, drop []ports.AddressPair) error {
	return p.change(ctx, parent, &pairEdit{remove: true,
		apply: func(have []ports.AddressPair) []ports.AddressPair { return withoutExact(have, drop) }})
}

// change queues edit for the port's next write and waits for its outcome.
// Whoever takes the port's lock first writes every change queued by then,
// not cancelled with its own context (each request is bounded by the
// client's timeout), so that one caller's end does not fail the others';
// they find theirs written when they get the lock in turn.
func (p *Pairs) change(ctx context.Context, parent string, mine *pairEdit) error {
	b := p.join(parent, mine)
	defer p.locks.Lock(parent)()
	if p.take(parent, b) {
		func() {
			defer close(b.done) // even if the write panics: no one waits forever
			for _, e := range b.edits {
				e.err = errNotWritten
			}
			p.writeBatch(context.WithoutCancel(ctx), parent, b.edits)
		}()
	}
	<-b.done // closed already: whoever took b held the lock before us
	return mine.err
}

// join queues e for parent's next write.
func (p *Pairs) join(parent string, e *pairEdit) *pairBatch {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.next == nil {
		p.next = map[string]*pairBatch{}
	}
	b := p.next[parent]
	if b == nil {
		b = &pairBatch{done: make(chan struct{})}
		p.next[parent] = b
	}
	b.edits = append(b.edits, e)
	return b
}

// take makes b the write of the caller (who holds the port's lock) unless
// another caller took it already; later changes go to a new batch.
func (p *Pairs) take(parent string, b *pairBatch) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.next[parent] != b {
		return false
	}
	delete(p.next, parent)
	return true
}

// writeBatch writes every edit in one update; if Neutron refuses that
// update as invalid (a pair too many for the port, say), each edit is then
// written on its own, removals first (they free room), so that each gets
// its own answer and the ones that fit are made.
func (p *Pairs) writeBatch(ctx context.Context, parent string, edits []*pairEdit) {
	err := p.write(ctx, parent, edits)
	if len(edits) > 1 && neutron.BadRequest(err) {
		for _, removals := range []bool{true, false} {
			for _, e := range edits {
				if e.remove == removals {
					e.err = p.write(ctx, parent, []*pairEdit{e})
				}
			}
		}
		return
	}
	for _, e := range edits {
		e.err = err
	}
}

// write makes the edits, in order, at the port's current revision,
// reading again after a conflict.
func (p *Pairs) write(ctx context.Context, parent string, edits []*pairEdit) error {
	var err error
	for range max(p.Attempts, 1) {
		var port *neutron.ParentPort
		if port, err = p.Neutron.GetParentPort(ctx, parent); err != nil {
			return err
		}
		want := port.AllowedAddressPairs
		for _, e := range edits {
			want = e.apply(want)
		}
		if samePairs(want, port.AllowedAddressPairs) {
			return nil
		}
		err = p.Neutron.SetAddressPairs(ctx, parent, want, port.RevisionNumber)
		if !neutron.PreconditionFailed(err) {
			return err
		}
	}
	return fmt.Errorf("port %s changed under every one of %d updates of its allowed address pairs: %w",
		parent, max(p.Attempts, 1), err)
}

// withPairs is have with add, each address once (add's MAC wins). Pure.
func withPairs(have, add []ports.AddressPair) []ports.AddressPair {
	out := without(have, func(h ports.AddressPair) bool {
		return slices.ContainsFunc(add, func(a ports.AddressPair) bool { return a.IPAddress == h.IPAddress })
	})
	return append(out, add...)
}

// withoutExact is have without the pairs in drop (address and MAC). Pure.
func withoutExact(have, drop []ports.AddressPair) []ports.AddressPair {
	return without(have, func(h ports.AddressPair) bool {
		return slices.ContainsFunc(drop, func(d ports.AddressPair) bool {
			return d.IPAddress == h.IPAddress && strings.EqualFold(d.MACAddress, h.MACAddress)
		})
	})
}

// without is a copy of have without what gone says, never nil (Neutron
// takes an empty list, not null, for "no pairs"). Pure.
func without(have []ports.AddressPair, gone func(ports.AddressPair) bool) []ports.AddressPair {
	return slices.DeleteFunc(append([]ports.AddressPair{}, have...), gone)
}

// samePairs compares as sets.
func samePairs(a, b []ports.AddressPair) bool {
	if len(a) != len(b) {
		return false
	}
	set := map[ports.AddressPair]bool{}
	for _, p := range a {
		set[p] = true
	}
	for _, p := range b {
		if !set[p] {
			return false
		}
	}
	return true
}
