// Package leader keeps a controller that lost its Lease without noticing
// from acting beside the new leader.
//
// client-go's elector notices a lost Lease only on its next renewal, which
// keeps trying for the renew deadline: a leader whose process was stopped
// (a frozen container, a process starved of CPU) resumes believing it leads
// and acts for up to that long while the standby, which took the expired
// Lease, acts too. The Guard counts on this process's own monotonic clock
// instead: once the Lease went a lease duration without a renewal by this
// process, another controller may lead, so it stops the manager at once.
// (A host suspend, which stops the monotonic clock too, is not seen.)
package leader

import (
	"context"
	"fmt"
	"sync"
	"time"

	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// Guard wraps the election's lock, to see this process's renewals, and is a
// manager Runnable (on the leader only) that fails once they stop.
type Guard struct {
	resourcelock.Interface
	// LeaseDuration is the election's: how long after the last renewal
	// others may take the Lease.
	LeaseDuration time.Duration
	// Tick is how often the guard looks (a quarter second by default).
	Tick time.Duration
	now  func() time.Time

	mu      sync.Mutex
	renewed time.Time // when this process's last successful renewal began
	holder  string    // the holder the last Get read
}

// NewGuard guards lock for an election with the given lease duration.
func NewGuard(lock resourcelock.Interface, leaseDuration time.Duration) *Guard {
	return &Guard{Interface: lock, LeaseDuration: leaseDuration, now: time.Now}
}

// Get remembers the holder it read.
func (g *Guard) Get(ctx context.Context) (*resourcelock.LeaderElectionRecord, []byte, error) {
	ler, raw, err := g.Interface.Get(ctx)
	if err == nil && ler != nil {
		g.mu.Lock()
		g.holder = ler.HolderIdentity
		g.mu.Unlock()
	}
	return ler, raw, err
}

// Create records the acquisition of a new Lease.
func (g *Guard) Create(ctx context.Context, ler resourcelock.LeaderElectionRecord) error {
	return g.write(ctx, ler, g.Interface.Create)
}

// Update records a renewal (or a takeover) by this process. It refuses to
// release a Lease another controller holds: client-go's release reads the
// Lease but decides on the holder it saw before, so a leader stopping on
// the guard's error would otherwise blank its successor's Lease.
func (g *Guard) Update(ctx context.Context, ler resourcelock.LeaderElectionRecord) error {
	g.mu.Lock()
	holder := g.holder
	g.mu.Unlock()
	if ler.HolderIdentity == "" && holder != g.Identity() {
		return fmt.Errorf("not releasing the controller Lease: %q holds it now", holder)
	}
	return g.write(ctx, ler, g.Interface.Update)
}

func (g *Guard) write(ctx context.Context, ler resourcelock.LeaderElectionRecord,
	do func(context.Context, resourcelock.LeaderElectionRecord) error) error {
	began := g.now() // others count the duration from no earlier than this
	if err := do(ctx, ler); err != nil {
		return err
	}
	if ler.HolderIdentity == g.Identity() {
		g.mu.Lock()
		g.renewed = began
		g.mu.Unlock()
	}
	return nil
}

// Start runs on the leader until ctx ends, and fails (stopping the manager)
// when the Lease went a lease duration without this process renewing it.
func (g *Guard) Start(ctx context.Context) error {
	tick := g.Tick
	if tick <= 0 {
		tick = 250 * time.Millisecond
	}
	t := time.NewTicker(tick)
	defer t.Stop()
	for {
		if err := g.Check(); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// Check fails when this process has led but not renewed the Lease for a
// lease duration.
func (g *Guard) Check() error {
	g.mu.Lock()
	renewed := g.renewed
	g.mu.Unlock()
	if renewed.IsZero() {
		return nil
	}
	if since := g.now().Sub(renewed); since > g.LeaseDuration {
		return fmt.Errorf("the controller Lease was last renewed by this process %s ago, over its %s duration "+
			"(was the process stopped?): another controller may lead now, so this one stops",
			since.Round(time.Millisecond), g.LeaseDuration)
	}
	return nil
}
