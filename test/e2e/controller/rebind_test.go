//go:build e2e

package controller

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/kuryr-k8s/kuryr/pkg/neutron"
	"github.com/kuryr-k8s/kuryr/test/e2e/framework"
)

// TestUnboundPortIsBoundAgain: a running pod's port that Neutron unbinds
// (ML2/OVN does, taking it under load for a virtual port, and so does an
// admin's `openstack port unset --host`) is bound to the pod's node again
// by the sweep; the pod stays Ready; the other pod's port is not written
// to. (Neutron keeps the port DOWN: ML2/OVN makes a port ACTIVE only when
// its OVN port goes up, and the pod's never went down.)
func TestUnboundPortIsBoundAgain(t *testing.T) {
	c, k, ns := framework.Setup(t, "e2e-rebind")
	pods := c.WaitReady(t, c.CreatePods(t, ns, "p", 2), 2*time.Minute)
	kps := k.WaitKuryrPorts(t, pods, time.Minute)
	nc := neutron.New(c.OS.Network)
	ctx := context.Background()
	portOf := func(i int) string {
		vif, _ := kps[pods[i].Namespace+"/"+pods[i].Name].Status.DefaultVIF()
		return vif.PortID
	}
	target, other := portOf(0), portOf(1)
	otherBefore, err := nc.GetPort(ctx, other)
	if err != nil {
		t.Fatal(err)
	}
	before, err := nc.GetPort(ctx, target)
	if err != nil {
		t.Fatal(err)
	}
	if err := nc.BindPort(ctx, target, "", before.RevisionNumber); err != nil {
		t.Fatal(err)
	}
	if p, err := nc.GetPort(ctx, target); err != nil || p.HostID != "" {
		t.Fatalf("port %s after unbinding: %+v, %v", target, p, err)
	}
	// The sweep runs 10 s after the start, then every 10 s.
	k.Controller(t, "restart", "--set", "controller.cleanup_period=10")
	t.Cleanup(func() { k.Controller(t, "restart") })
	start := time.Now()
	framework.Eventually(t, 2*time.Minute, time.Second, "port bound to "+pods[0].Spec.NodeName, func() (bool, error) {
		p, err := nc.GetPort(ctx, target)
		if err != nil {
			return false, err
		}
		return p.HostID == pods[0].Spec.NodeName && neutron.Bound(p),
			fmt.Errorf("bound to %q (vif_type %q), status %s", p.HostID, p.VIFType, p.Status)
	})
	t.Logf("the unbound port is bound to its node again %s after the controller restarted", time.Since(start).Round(time.Millisecond))
	otherAfter, err := nc.GetPort(ctx, other)
	if err != nil {
		t.Fatal(err)
	}
	if otherAfter.RevisionNumber != otherBefore.RevisionNumber {
		t.Errorf("the bound pod's port was written to: revision %d, then %d", otherBefore.RevisionNumber, otherAfter.RevisionNumber)
	}
	c.WaitReady(t, pods, time.Minute)
}
