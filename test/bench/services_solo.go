package main

import (
	"context"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kuryrv1 "github.com/kuryr-k8s/kuryr/api/v1"
	"github.com/kuryr-k8s/kuryr/pkg/octavia"
)

// soloChanges: how many times the lone endpoint change is made, each way.
const soloChanges = 5

// yardstickSolo makes a lone endpoint change directly in Octavia, on one
// load balancer at a time while nothing else happens: a member out of
// both pools, then back in, soloChanges times; it returns the times until
// the load balancer was ACTIVE again.
func yardstickSolo(ctx context.Context, oc *octavia.Client, member string) ([]time.Duration, error) {
	lbs, err := oc.FindLoadBalancers(ctx, []string{benchTag})
	if err != nil {
		return nil, err
	}
	var lat []time.Duration
	for i := 0; i < soloChanges && i < len(lbs); i++ {
		id := lbs[i].ID
		specs, err := memberSpecs(ctx, oc, id, member)
		if err != nil {
			return nil, err
		}
		t := time.Now()
		if err := removeMember(ctx, oc, id, member); err != nil {
			return nil, err
		}
		lat = append(lat, time.Since(t))
		t = time.Now()
		for pool, m := range specs {
			err := whenMutable(time.Now().Add(2*time.Minute), func() error { return oc.CreateMember(ctx, pool, m) })
			if err != nil {
				return nil, err
			}
			if err := waitActive(ctx, oc, id, time.Now().Add(2*time.Minute)); err != nil {
				return nil, err
			}
		}
		lat = append(lat, time.Since(t))
	}
	return lat, nil
}

// memberSpecs returns, by pool, the member named member of the load balancer.
func memberSpecs(ctx context.Context, oc *octavia.Client, lbID, member string) (map[string]octavia.MemberSpec, error) {
	pools, err := oc.Pools(ctx, lbID)
	if err != nil {
		return nil, err
	}
	specs := map[string]octavia.MemberSpec{}
	for _, p := range pools {
		ms, err := oc.Members(ctx, p.ID)
		if err != nil {
			return nil, err
		}
		for _, m := range ms {
			if m.Name == member {
				specs[p.ID] = octavia.MemberSpec{Name: m.Name, Address: m.Address, Port: m.Port, SubnetID: m.SubnetID}
			}
		}
	}
	return specs, nil
}

// kuryrSolo makes the same lone endpoint change through kuryr: one Service
// with two backends, one of them taken out (its label goes) and put back,
// soloChanges times, each timed until Octavia holds the members in both
// pools.
func kuryrSolo(ctx context.Context, e *env, oc *octavia.Client, ns string, a, b string, direct []time.Duration) error {
	for _, p := range []string{a, b} {
		if err := setLabel(ctx, e, ns, p, `"on"`); err != nil {
			return err
		}
	}
	svc := service(0)
	svc.Name, svc.Spec.Selector = "solo", map[string]string{"solo": "on"}
	if _, err := e.Kube.CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		return err
	}
	pools, err := soloPools(ctx, e, ns)
	if err != nil {
		return err
	}
	var lat []time.Duration
	for i := 0; i < soloChanges; i++ {
		for _, c := range []struct {
			label string
			want  int
		}{{"null", 1}, {`"on"`, 2}} {
			t0 := time.Now()
			if err := setLabel(ctx, e, ns, b, c.label); err != nil {
				return err
			}
			at, ok := waitMembersEvery(ctx, oc, pools, c.want, t0.Add(time.Minute), 50*time.Millisecond)
			if !ok {
				return fmt.Errorf("solo Service without %d members per pool a minute after the change", c.want)
			}
			lat = append(lat, at.Sub(t0))
		}
	}
	fmt.Printf("kuryr: lone endpoint change (one Service, out and back %d times) -> both pools updated   p50 %s  p99 %s  max %s\n",
		soloChanges, secs(percentile(lat, 50)), secs(percentile(lat, 99)), secs(percentile(lat, 100)))
	if len(direct) > 0 {
		fmt.Printf("Octavia alone: the same change on one load balancer -> ACTIVE   p50 %s  p99 %s  max %s\n",
			secs(percentile(direct, 50)), secs(percentile(direct, 99)), secs(percentile(direct, 100)))
	}
	fmt.Printf("target: endpoint change in Octavia p99 <= 1s: %s (%s)\n\n", verdict(percentile(lat, 99) <= time.Second), secs(percentile(lat, 99)))
	return nil
}

func setLabel(ctx context.Context, e *env, ns, pod, value string) error {
	patch := []byte(`{"metadata":{"labels":{"solo":` + value + `}}}`)
	_, err := e.Kube.CoreV1().Pods(ns).Patch(ctx, pod, types.MergePatchType, patch, metav1.PatchOptions{})
	return err
}

// soloPools waits until the solo Service's KuryrLoadBalancer is Ready with
// two members in each pool and returns its pools.
func soloPools(ctx context.Context, e *env, ns string) ([]string, error) {
	var pools []string
	err := poll(2*time.Minute, 250*time.Millisecond, func() (bool, error) {
		var k kuryrv1.KuryrLoadBalancer
		if err := e.kuryr.Get(ctx, client.ObjectKey{Namespace: ns, Name: "solo"}, &k); err != nil {
			return false, nil
		}
		if k.Status.Members != 4 || len(k.Status.Listeners) != 2 {
			return false, nil
		}
		for _, l := range k.Status.Listeners {
			pools = append(pools, l.PoolID)
		}
		return true, nil
	}, func() error { return fmt.Errorf("solo Service not served with 2 members per pool after 2 minutes") })
	return pools, err
}
