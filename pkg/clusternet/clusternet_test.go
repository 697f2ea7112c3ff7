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
