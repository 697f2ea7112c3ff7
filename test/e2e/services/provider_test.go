//go:build e2e

package services

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/kuryr-k8s/kuryr/pkg/octavia"
	"github.com/kuryr-k8s/kuryr/test/e2e/framework"
)

// TestProviderLostState: under load the ovn provider can lose what it did
// (each Octavia API worker acts on its own copy of the OVN database). It
// leaves a member that Octavia shows and OVN does not: its delete fails
// and leaves it in ERROR, every time (ovn-octavia-provider 3.0; 8.0
// deletes it). Or a pool PENDING_UPDATE under an ACTIVE load balancer:
// every write to it answers 409, forever. Both are made here as the
// provider leaves them; kuryr replaces the pool (where the provider cannot
// delete the member), then the load balancer, says so in a Warning Event,
// and the Service answers from
// the backends it has.
func TestProviderLostState(t *testing.T) {
	c, k, ns := framework.Setup(t, "e2e-svclost")
	backends := createBackends(t, c, ns, "web", 0, 3)
	cl := clientPod(t, c, ns, "client", c.Nodes[0])
	svc := createService(t, c, webService(ns, "web", "web"))
	vip := svc.Spec.ClusterIP
	lb := waitKLB(t, k, ns, "web", 3, 3*time.Minute).Status.LoadBalancer.ID
	oct := octavia.New(c.OS.LoadBalancer)

	// A member OVN lost: its backend goes.
	poolID, memberID := memberOf(t, oct, lb, backends[0].Status.PodIP)
	loseInOVN(t, k, lb, poolID, memberID)
	start := time.Now()
	deletePod(t, c, backends[0])
	waitKLB(t, k, ns, "web", 2, 5*time.Minute)
	if p, _ := memberOf(t, oct, lb, backends[1].Status.PodIP); p != poolID {
		waitWarning(t, c, ns, "PoolReplaced", poolID)
		t.Logf("member lost by the provider: pool replaced, Ready with 2 members %s after its backend went",
			time.Since(start).Round(time.Millisecond))
	} else {
		// ovn-octavia-provider 8.0 deletes a member its OVN load balancer
		// lacks: the pool stays, without the member.
		ms, err := oct.Members(context.Background(), poolID)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range ms {
			if m.ID == memberID {
				t.Errorf("pool %s kept, and the lost member %s is still in it (%s)", poolID, m.ID, m.ProvisioningStatus)
			}
		}
		t.Logf("member lost by the provider: the provider deleted it, Ready with 2 members %s after its backend went",
			time.Since(start).Round(time.Millisecond))
	}
	reachesAll(t, cl, httpCmd(vip, 80), podNames(backends[1:]), time.Minute)

	// A pool stuck PENDING_UPDATE: a backend comes.
	k.Ctl(t, "sql", "octavia", fmt.Sprintf("UPDATE pool SET provisioning_status='PENDING_UPDATE' WHERE load_balancer_id='%s'", lb))
	start = time.Now()
	backends = append(backends[1:], createBackends(t, c, ns, "web", 3, 1)...)
	klb := waitKLB(t, k, ns, "web", 3, 5*time.Minute)
	waitWarning(t, c, ns, "LoadBalancerStuck", lb)
	t.Logf("pool stuck PENDING_UPDATE: load balancer replaced, Ready with 3 members %s after the backend came",
		time.Since(start).Round(time.Millisecond))
	if klb.Status.LoadBalancer.ID == lb {
		t.Errorf("load balancer %s is still the Service's", lb)
	}
	framework.Eventually(t, 2*time.Minute, 2*time.Second, "one load balancer for the Service", func() (bool, error) {
		lbs := serviceLBs(t, c, k.Cluster, string(svc.UID))
		return len(lbs) == 1, fmt.Errorf("%d load balancers", len(lbs))
	})
	reachesAll(t, cl, httpCmd(vip, 80), podNames(backends), time.Minute)
}

// memberOf finds the pool of load balancer lb that has a member at addr.
func memberOf(t *testing.T, oct *octavia.Client, lb, addr string) (poolID, memberID string) {
	t.Helper()
	ctx := context.Background()
	pools, err := oct.Pools(ctx, lb)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pools {
		ms, err := oct.Members(ctx, p.ID)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range ms {
			if m.Address == addr {
				return p.ID, m.ID
			}
		}
	}
	t.Fatalf("no member %s under load balancer %s", addr, lb)
	return "", ""
}

// loseInOVN removes a member from the OVN load balancer's record of its
// pool (external_ids pool_<id>: "member_<id>_<address>:<port>_<subnet>,..."),
// as a provider worker acting on a stale copy leaves it.
func loseInOVN(t *testing.T, k *framework.Kuryr, lb, poolID, memberID string) {
	t.Helper()
	key := "external_ids:pool_" + poolID
	// The provider writes OVN after Octavia shows the member; and an API
	// worker whose copy of OVN lags can give the load balancer a second row
	// of the same protocol: the member goes from every row that lists it.
	lost := 0
	framework.Eventually(t, time.Minute, time.Second, "member "+memberID+" in OVN's "+key, func() (bool, error) {
		var seen []string
		for _, row := range strings.Fields(k.Ctl(t, "nbctl", "--bare", "--columns=_uuid", "find", "Load_Balancer", "name="+lb)) {
			cur := strings.Trim(strings.TrimSpace(k.Ctl(t, "nbctl", "--if-exists", "get", "Load_Balancer", row, key)), `"`)
			if cur == "" {
				continue
			}
			seen = append(seen, row+": "+cur)
			var kept []string
			for _, m := range strings.Split(cur, ",") {
				if !strings.HasPrefix(m, "member_"+memberID+"_") {
					kept = append(kept, m)
				}
			}
			if len(kept) < len(strings.Split(cur, ",")) {
				k.Ctl(t, "nbctl", "set", "Load_Balancer", row, fmt.Sprintf("%s=%q", key, strings.Join(kept, ",")))
				lost++
			}
		}
		return lost > 0, fmt.Errorf("OVN load balancer %s rows with %s: %v", lb, key, seen)
	})
}
