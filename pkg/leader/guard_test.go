package leader

import (
	"context"
	"errors"
	"testing"
	"time"

	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// fakeLock is a lock whose writes succeed unless failing.
type fakeLock struct {
	resourcelock.Interface
	failing bool
}

func (f *fakeLock) Identity() string { return "me" }
func (f *fakeLock) Create(context.Context, resourcelock.LeaderElectionRecord) error {
	if f.failing {
		return errors.New("conflict")
	}
	return nil
}
func (f *fakeLock) Update(ctx context.Context, ler resourcelock.LeaderElectionRecord) error {
	return f.Create(ctx, ler)
}

func TestGuard(t *testing.T) {
	mine := resourcelock.LeaderElectionRecord{HolderIdentity: "me"}
	released := resourcelock.LeaderElectionRecord{HolderIdentity: ""}
	for _, tc := range []struct {
		name    string
		writes  []resourcelock.LeaderElectionRecord
		failing bool
		after   time.Duration
		stops   bool
	}{
		{name: "never led", after: time.Hour},
		{name: "renewed lately", writes: []resourcelock.LeaderElectionRecord{mine}, after: 14 * time.Second},
		{name: "not renewed for a lease duration", writes: []resourcelock.LeaderElectionRecord{mine}, after: 16 * time.Second, stops: true},
		{name: "a failed write is no renewal", writes: []resourcelock.LeaderElectionRecord{mine}, failing: true, after: time.Hour},
		{name: "releasing is no renewal", writes: []resourcelock.LeaderElectionRecord{released}, after: time.Hour},
	} {
		t.Run(tc.name, func(t *testing.T) {
			now := time.Unix(1000, 0)
			lock := &fakeLock{failing: tc.failing}
			g := NewGuard(lock, 15*time.Second)
			g.now = func() time.Time { return now }
			for _, w := range tc.writes {
				_ = g.Update(context.Background(), w)
			}
			now = now.Add(tc.after)
			if err := g.Check(); (err != nil) != tc.stops {
				t.Errorf("Check() = %v, want stopping %v", err, tc.stops)
			}
		})
	}
}

// A process frozen past the lease duration stops at its first look after
// it resumes; one that renews keeps running until its context ends.
func TestGuardStartStopsAFrozenLeader(t *testing.T) {
	now := time.Unix(1000, 0)
	g := NewGuard(&fakeLock{}, 15*time.Second)
	g.now = func() time.Time { return now }
	g.Tick = time.Millisecond
	if err := g.Create(context.Background(), resourcelock.LeaderElectionRecord{HolderIdentity: "me"}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if err := g.Start(ctx); err != nil {
		t.Fatalf("a renewing leader stopped: %v", err)
	}
	now = now.Add(time.Minute)
	if err := g.Start(context.Background()); err == nil {
		t.Fatal("a frozen leader kept running")
	}
}

// readLock serves a Lease held by holder and counts the writes.
type readLock struct {
	fakeLock
	holder string
	writes int
}

func (r *readLock) Get(context.Context) (*resourcelock.LeaderElectionRecord, []byte, error) {
	return &resourcelock.LeaderElectionRecord{HolderIdentity: r.holder}, nil, nil
}
func (r *readLock) Update(context.Context, resourcelock.LeaderElectionRecord) error {
	r.writes++
	return nil
}

// A stopping leader releases its own Lease, never its successor's.
func TestGuardReleasesOnlyItsOwnLease(t *testing.T) {
	for _, tc := range []struct {
		holder  string
		release bool
	}{{"me", true}, {"the-standby", false}, {"", false}} {
		lock := &readLock{holder: tc.holder}
		g := NewGuard(lock, 15*time.Second)
		if _, _, err := g.Get(context.Background()); err != nil {
			t.Fatal(err)
		}
		err := g.Update(context.Background(), resourcelock.LeaderElectionRecord{})
		if released := err == nil && lock.writes == 1; released != tc.release {
			t.Errorf("holder %q: released %v (%v), want %v", tc.holder, released, err, tc.release)
		}
	}
}
