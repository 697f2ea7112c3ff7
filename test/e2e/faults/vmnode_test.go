//go:build e2e

package faults

import (
	"context"
	"fmt"
	"math/rand"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	kuryrv1 "github.com/kuryr-k8s/kuryr/api/v1"
	"github.com/kuryr-k8s/kuryr/pkg/controller/nested"
	"github.com/kuryr-k8s/kuryr/pkg/names"
	"github.com/kuryr-k8s/kuryr/pkg/neutron"
	"github.com/kuryr-k8s/kuryr/test/e2e/framework"
)

// TestVMNodeCrashes: pods on a VM node (nested-macvlan: each pod's address
// and MAC are an allowed address pair of the VM's port) are churned, three
// waves of 8, while the controller and the VM node's daemon are killed
// (SIGKILL) at random moments, 6 times. Everything converges: every live
// pod Ready (its VM's kubelet probes it), the VM's port holds exactly the
// live pods' pairs in kuryr's range, and no pod port is left without a
// live pod.
func TestVMNodeCrashes(t *testing.T) {
	c, k, ns := setup(t, "e2e-vmcrash")
	if len(c.VMNodes) == 0 {
		t.Fatal("the local cloud has no VM node: it was brought up with KURYR_CLOUD_VM_NODES=\"\"")
	}
	vm := c.VMNodes[0]
	victims := []string{"kuryr-controller", vm + "-kuryr-daemon"}
	kills := 0
	live := churn(t, c, ns, []string{vm}, 3, 8, func(int) {
		for range 2 {
			time.Sleep(time.Duration(500+rand.Intn(2500)) * time.Millisecond)
			v := victims[kills%len(victims)]
			k.Crash(t, v)
			kills++
			t.Logf("killed %s (%d of 6)", v, kills)
		}
	})
	start := time.Now()
	live = c.WaitReady(t, live, convergeTimeout)
	t.Logf("%d live pods on %s Ready %s after the campaign", len(live), vm, time.Since(start).Round(time.Millisecond))
	framework.Eventually(t, convergeTimeout, 2*time.Second, "the VM port's pairs and Neutron converged", func() (bool, error) {
		err := checkVM(t, c, k, ns, live)
		return err == nil, err
	})
	t.Logf("converged %s after the campaign: the VM port holds the %d live pods' pairs, nothing else of kuryr's",
		time.Since(start).Round(time.Millisecond), len(live))
	k.Controller(t, "restart") // the cloud's own settings
	c.DeleteNamespace(t, ns)
	c.WaitNoClusterPorts(t, k.Cluster, 2*time.Minute)
}

// checkVM: each live pod's KuryrPort names its own port, a macvlan on one
// VM port; that port's pairs in kuryr's MAC range are exactly the live
// pods' (address and MAC); no cluster port belongs to a pod that is gone,
// nor two to one pod.
func checkVM(t *testing.T, c *framework.Cloud, k *framework.Kuryr, ns string, live []*corev1.Pod) error {
	var kps kuryrv1.KuryrPortList
	if err := k.List(context.Background(), &kps); err != nil {
		return err
	}
	byUID := map[string]kuryrv1.VIF{}
	for _, kp := range kps.Items {
		if v, ok := kp.Status.DefaultVIF(); ok {
			byUID[kp.Spec.PodUID] = v
		}
	}
	parent, want := "", map[string]string{} // MAC -> address
	liveUIDs := map[string]bool{}
	for _, p := range live {
		liveUIDs[string(p.UID)] = true
		v, ok := byUID[string(p.UID)]
		switch {
		case !ok:
			return fmt.Errorf("pod %s has no KuryrPort with port data", p.Name)
		case v.Nested == nil || v.Nested.Mode != kuryrv1.NestedMacvlan:
			return fmt.Errorf("pod %s: VIF %+v, want a macvlan on its VM's port", p.Name, v.Nested)
		case parent != "" && v.Nested.ParentPortID != parent:
			return fmt.Errorf("pod %s on VM port %s, the others on %s", p.Name, v.Nested.ParentPortID, parent)
		}
		parent = v.Nested.ParentPortID
		want[v.MACAddress], _, _ = strings.Cut(v.IPs[0].Address, "/")
	}
	vmPort, err := neutron.New(c.OS.Network).GetParentPort(context.Background(), parent)
	if err != nil {
		return err
	}
	have := map[string]string{}
	for _, a := range vmPort.AllowedAddressPairs {
		if nested.IsMacvlanMAC(a.MACAddress) {
			have[a.MACAddress] = a.IPAddress
		}
	}
	if fmt.Sprint(have) != fmt.Sprint(want) {
		return fmt.Errorf("VM port %s: kuryr's pairs %v, want the live pods' %v", parent, have, want)
	}
	perPod := map[string]int{}
	for _, p := range c.ClusterPorts(t, k.Cluster) {
		if uid := names.PodUIDOf(p.Tags); uid != "" {
			perPod[uid]++
		}
	}
	return checkPodPorts(perPod, liveUIDs)
}
