package clusternet

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kuryr-k8s/kuryr/pkg/neutron"
)

type slowNeutron struct {
	routerOf atomic.Int32
	fail     atomic.Bool
}

func (n *slowNeutron) RouterOf(context.Context, string) (string, error) {
	n.routerOf.Add(1)
	time.Sleep(20 * time.Millisecond) // a listing takes a while
	if n.fail.Load() {
		return "", errors.New("503")
	}
	return "r1", nil
}

func (n *slowNeutron) RouterSubnets(context.Context, string) ([]string, error) {
	return []string{"s1"}, nil
}

func (n *slowNeutron) Subnet(_ context.Context, id string) (*neutron.Subnet, error) {
	return &neutron.Subnet{ID: id, CIDR: "10.0.0.0/24"}, nil
}

func (n *slowNeutron) SubnetPoolPrefixes(context.Context, string) ([]string, error) { return nil, nil }

// Callers that find the networks stale together share one read: the
// reconcilers of many nodes do not each list the subnets' routers.
func TestReadOncePerTTL(t *testing.T) {
	n := &slowNeutron{}
	s := &Source{Neutron: n, Info: n, Subnets: []string{"s1"}, TTL: time.Minute}
	readTogether(s, 20, func(got Networks, err error) {
		if err != nil || len(got.Subnets) != 1 {
			t.Errorf("read %+v, %v", got, err)
		}
	})
	if got := n.routerOf.Load(); got != 1 {
		t.Errorf("%d router lookups for 20 concurrent readers, want 1", got)
	}
}

// A failed read stands for the callers behind it for a while: they do not
// each wait for a failing read of their own.
func TestFailedReadIsShared(t *testing.T) {
	n := &slowNeutron{}
	n.fail.Store(true)
	s := &Source{Neutron: n, Info: n, Subnets: []string{"s1"}, TTL: time.Minute}
	readTogether(s, 20, func(_ Networks, err error) {
		if err == nil {
			t.Error("no error from a failed read")
		}
	})
	if got := n.routerOf.Load(); got != 1 {
		t.Errorf("%d router lookups for 20 concurrent readers of a failing Neutron, want 1", got)
	}
}

// readTogether has n callers read s at once, and checks each answer.
func readTogether(s *Source, n int, check func(Networks, error)) {
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			check(s.Read(context.Background()))
		}()
	}
	wg.Wait()
}

// While the networks are read again, callers that find them stale get
// what was known at once instead of waiting for Neutron.
func TestStaleServedDuringRead(t *testing.T) {
	n := &slowNeutron{}
	s := &Source{Neutron: n, Info: n, Subnets: []string{"s1"}, TTL: time.Minute}
	if _, err := s.Read(context.Background()); err != nil {
		t.Fatal(err)
	}
	s.mu.Lock()
	s.readAt = time.Now().Add(-2 * time.Minute) // stale
	s.mu.Unlock()
	s.reading.Lock()            // a read under way
	done := make(chan error, 1) // a blocked reader ends once the lock is released, not blocked on the send
	go func() {
		got, err := s.Read(context.Background())
		if err == nil && len(got.Subnets) != 1 {
			err = errors.New("not what was known")
		}
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Error(err)
		}
	case <-time.After(5 * time.Second):
		t.Error("a caller with stale networks waited for the read under way")
	}
	s.reading.Unlock()
}
