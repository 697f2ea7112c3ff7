package main

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/kuryr-k8s/kuryr/pkg/octavia"
)

// changePoll: how often the yardstick reads a load balancer while it waits
// for it to leave PENDING_UPDATE between its two pool changes.
const changePoll = 100 * time.Millisecond

// yardstickChange makes the endpoint change kuryr makes (one backend out
// of both pools) directly in Octavia on the yardstick's load balancers,
// all at once, each as fast as Octavia allows (the second pool change as
// soon as the first is ACTIVE), and prints when both pools of each held
// one member fewer.
func yardstickChange(ctx context.Context, oc *octavia.Client, member string) (time.Duration, error) {
	lbs, err := oc.FindLoadBalancers(ctx, []string{benchTag})
	if err != nil {
		return 0, err
	}
	t0 := time.Now()
	lat := make([]time.Duration, len(lbs))
	errs := make([]error, len(lbs))
	var wg sync.WaitGroup
	for i, lb := range lbs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = removeMember(ctx, oc, lb.ID, member)
			lat[i] = time.Since(t0)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return 0, fmt.Errorf("yardstick endpoint change: %w", err)
		}
	}
	p99 := percentile(lat, 99)
	fmt.Printf("Octavia alone: member deleted from both pools, all %d at once -> ACTIVE, member gone   p50 %s  p99 %s  max %s\n",
		len(lbs), secs(percentile(lat, 50)), secs(p99), secs(percentile(lat, 100)))
	return p99, nil
}

// removeMember deletes the member named member from every pool of the load
// balancer, one pool after the other (Octavia refuses a change while the
// load balancer is PENDING_UPDATE), and returns once it is ACTIVE again.
func removeMember(ctx context.Context, oc *octavia.Client, lbID, member string) error {
	pools, err := oc.Pools(ctx, lbID)
	if err != nil {
		return err
	}
	for _, p := range pools {
		ms, err := oc.Members(ctx, p.ID)
		if err != nil {
			return err
		}
		for _, m := range ms {
			if m.Name != member {
				continue
			}
			err := whenMutable(time.Now().Add(2*time.Minute), func() error { return oc.DeleteMember(ctx, p.ID, m.ID) })
			if err != nil {
				return err
			}
			if err := waitActive(ctx, oc, lbID, time.Now().Add(2*time.Minute)); err != nil {
				return err
			}
			if err := waitMemberGone(ctx, oc, p.ID, m.ID, time.Now().Add(2*time.Minute)); err != nil {
				return err
			}
		}
	}
	return nil
}

// waitMemberGone waits until a deleted member is no longer listed: with
// ovn-octavia-provider 8.0 the load balancer can be ACTIVE again while
// the member is still there (PENDING_DELETE), and adding it back then is
// refused (409 "Another member on this pool is already using ip").
func waitMemberGone(ctx context.Context, oc *octavia.Client, poolID, memberID string, deadline time.Time) error {
	var last error
	for time.Now().Before(deadline) && ctx.Err() == nil {
		ms, err := oc.Members(ctx, poolID)
		if err == nil && !slices.ContainsFunc(ms, func(m octavia.Member) bool { return m.ID == memberID }) {
			return nil
		}
		last = err // a transient error is read again until the deadline
		time.Sleep(changePoll)
	}
	return fmt.Errorf("member %s still in pool %s 2 minutes after its delete (last error: %v)", memberID, poolID, last)
}

// whenMutable makes a member write, again while Octavia answers that its
// pool is immutable (ovn-octavia-provider 8.0 can show the load balancer
// ACTIVE while the pool it just changed is still PENDING_UPDATE).
func whenMutable(deadline time.Time, write func() error) error {
	for {
		err := write()
		if err == nil || !octavia.Busy(err) || !time.Now().Before(deadline) {
			return err
		}
		time.Sleep(changePoll)
	}
}

func waitActive(ctx context.Context, oc *octavia.Client, lbID string, deadline time.Time) error {
	for time.Now().Before(deadline) {
		lb, err := oc.GetLoadBalancer(ctx, lbID)
		if err == nil && lb.ProvisioningStatus == "ACTIVE" {
			return nil
		}
		time.Sleep(changePoll)
	}
	return fmt.Errorf("load balancer %s not ACTIVE 2 minutes after a member delete", lbID)
}
