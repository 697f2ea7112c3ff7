package clusternet

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kuryr-k8s/kuryr/pkg/neutron"
)

type slowNeutron struct{ routerOf atomic.Int32 }

func (n *slowNeutron) RouterOf(context.Context, string) (string, error) {
	n.routerOf.Add(1)
	time.Sleep(20 * time.Millisecond) // a listing takes a while
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
	var wg sync.WaitGroup
	for range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if got, err := s.Read(context.Background()); err != nil || len(got.Subnets) != 1 {
				t.Errorf("read %+v, %v", got, err)
			}
		}()
	}
	wg.Wait()
	if got := n.routerOf.Load(); got != 1 {
		t.Errorf("%d router lookups for 20 concurrent readers, want 1", got)
	}
}
