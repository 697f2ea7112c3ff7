//go:build e2e

// Package controller tests kuryr-controller against the local cloud: pods
// get Neutron ports bound to their nodes, namespaces get networks, nothing
// leaks, and a crash in the middle loses and duplicates nothing.
package controller

import (
	"context"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kuryrv1 "github.com/kuryr-k8s/kuryr/api/v1"
	"github.com/kuryr-k8s/kuryr/pkg/names"
	"github.com/kuryr-k8s/kuryr/pkg/neutron"
	"github.com/kuryr-k8s/kuryr/test/e2e/framework"
)

const podsPerNamespace = 10

func TestPodPortsDefaultSubnet(t *testing.T) {
	podsInTwoNamespaces(t, false)
}

func TestPodPortsNamespaceSubnets(t *testing.T) {
	podsInTwoNamespaces(t, true)
}

func podsInTwoNamespaces(t *testing.T, namespaced bool) {
	c := framework.Connect(t)
	k := c.ConnectKuryr(t)
	if namespaced {
		k.UseSubnetDriver(t, "namespace")
	}
	var pods []*corev1.Pod
	namespaces := []string{framework.Name("e2e-a"), framework.Name("e2e-b")}
	for _, ns := range namespaces {
		c.CreateNamespace(t, ns)
		pods = append(pods, c.CreatePods(t, ns, "p", podsPerNamespace)...)
	}
	start := time.Now()
	kps := k.WaitKuryrPorts(t, pods, 2*time.Minute)
	t.Logf("%d pods: all KuryrPorts carry port data after %s", len(pods), time.Since(start).Round(time.Millisecond))
	checkPorts(t, c, k, pods, kps, namespaced)

	for _, ns := range namespaces {
		c.DeleteNamespace(t, ns)
	}
	c.WaitNoClusterPorts(t, k.Cluster, time.Minute)
	if namespaced {
		nets, err := neutron.New(c.OS.Network).ListNetworks(context.Background(), []string{names.ClusterTag(k.Cluster)})
		left := 0
		for _, n := range nets {
			if names.NamespaceOf(n.Tags) != "" { // not the nodes' (node mode)
				left++
			}
		}
		if err != nil || left != 0 {
			t.Errorf("namespace networks left: %d, %v", left, err)
		}
	}
}

// checkPorts verifies, through the Neutron API, that each pod has exactly
// one port, bound to its node, matching its KuryrPort.
func checkPorts(t *testing.T, c *framework.Cloud, k *framework.Kuryr, pods []*corev1.Pod, kps map[string]*kuryrv1.KuryrPort, namespaced bool) {
	t.Helper()
	byID := map[string]neutron.Port{}
	perPod := map[string]int{}
	for _, p := range c.ClusterPorts(t, k.Cluster) {
		byID[p.ID] = p
		perPod[names.PodUIDOf(p.Tags)]++
	}
	if len(byID) != len(pods) {
		t.Errorf("%d kuryr ports in Neutron for %d pods", len(byID), len(pods))
	}
	networkOf := map[string]string{} // namespace -> network
	for _, pod := range pods {
		kp := kps[pod.Namespace+"/"+pod.Name]
		vif, _ := kp.Status.DefaultVIF()
		port, ok := byID[vif.PortID]
		where := pod.Namespace + "/" + pod.Name
		switch {
		case !ok:
			t.Errorf("%s: port %s not in Neutron", where, vif.PortID)
			continue
		case perPod[string(pod.UID)] != 1:
			t.Errorf("%s: %d ports tagged with its UID", where, perPod[string(pod.UID)])
		case port.HostID != pod.Spec.NodeName:
			t.Errorf("%s: port bound to %q, pod on %q", where, port.HostID, pod.Spec.NodeName)
		case port.DeviceOwner != "compute:kuryr" || port.Name != where || port.DeviceID != string(pod.UID):
			t.Errorf("%s: port owner %q name %q device %q", where, port.DeviceOwner, port.Name, port.DeviceID)
		case port.MACAddress != vif.MACAddress || !strings.HasPrefix(vif.IPs[0].Address, port.FixedIPs[0].IPAddress+"/"):
			t.Errorf("%s: port %s/%v vs KuryrPort %s/%v", where, port.MACAddress, port.FixedIPs, vif.MACAddress, vif.IPs)
		case vif.MTU != 1442 || vif.Gateway == "" || vif.VIFType != "ovs" || vif.NetworkID != port.NetworkID:
			t.Errorf("%s: KuryrPort VIF %+v", where, vif)
		case kp.Labels[kuryrv1.NodeNameLabel] != pod.Spec.NodeName || kp.OwnerReferences[0].UID != pod.UID:
			t.Errorf("%s: KuryrPort labels %v owners %v", where, kp.Labels, kp.OwnerReferences)
		}
		if prev, seen := networkOf[pod.Namespace]; seen && prev != port.NetworkID {
			t.Errorf("%s: pods of one namespace on networks %s and %s", where, prev, port.NetworkID)
		}
		networkOf[pod.Namespace] = port.NetworkID
	}
	nets := map[string]bool{}
	for ns, n := range networkOf {
		nets[n] = true
		if namespaced {
			checkNamespaceNetwork(t, k, ns, n)
		} else if n != c.PodNet {
			t.Errorf("namespace %s on network %s, want the default pod network %s", ns, n, c.PodNet)
		}
	}
	if namespaced && len(nets) != len(networkOf) {
		t.Errorf("namespaces share networks: %v", networkOf)
	}
}

func checkNamespaceNetwork(t *testing.T, k *framework.Kuryr, ns, netID string) {
	t.Helper()
	var kn kuryrv1.KuryrNetwork
	if err := k.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: ns}, &kn); err != nil {
		t.Errorf("KuryrNetwork of %s: %v", ns, err)
		return
	}
	_, pool, _ := net.ParseCIDR("10.10.0.0/16")
	ip, _, err := net.ParseCIDR(kn.Status.SubnetCIDR)
	if kn.Status.NetID != netID || err != nil || !pool.Contains(ip) || kn.Status.SubnetCIDR == "10.10.0.0/24" || !kn.Status.Ready() {
		t.Errorf("KuryrNetwork %s status %+v (pods on %s)", ns, kn.Status, netID)
	}
}

// TestControllerKilledMidway kills -9 the controller while it creates ports
// for 20 pods and restarts it: the same end state, nothing leaked, nothing
// duplicated.
func TestControllerKilledMidway(t *testing.T) {
	c, k, ns := framework.Setup(t, "e2e-crash")
	pods := c.CreatePods(t, ns, "p", 20)
	framework.Eventually(t, time.Minute, 20*time.Millisecond, "some ports created", func() (bool, error) {
		n := len(c.ClusterPorts(t, k.Cluster))
		return n >= 3, fmt.Errorf("%d ports", n)
	})
	k.Controller(t, "kill")
	killedAt := len(c.ClusterPorts(t, k.Cluster))
	t.Logf("killed the controller with %d of 20 ports created", killedAt)
	// Creates in flight at the kill may commit after the restart has listed
	// the ports; the sweeps that follow 2 x [neutron] timeout + 5 s, and 35 s
	// after that (once they are no longer young), remove such duplicates. A
	// short timeout keeps the test short.
	restarted := time.Now()
	k.Controller(t, "start", "--set", "neutron.timeout=10")
	t.Cleanup(func() { k.Controller(t, "restart") })
	kps := k.WaitKuryrPorts(t, pods, 2*time.Minute)
	t.Logf("all 20 KuryrPorts carry port data %s after the restart", time.Since(restarted).Round(time.Millisecond))
	framework.Eventually(t, 2*time.Minute, time.Second, "one port per pod", func() (bool, error) {
		n := len(c.ClusterPorts(t, k.Cluster))
		return n == len(pods), fmt.Errorf("%d ports for %d pods", n, len(pods))
	})
	t.Logf("one port per pod %s after the restart", time.Since(restarted).Round(time.Millisecond))
	checkPorts(t, c, k, pods, kps, false)
	c.DeleteNamespace(t, ns)
	c.WaitNoClusterPorts(t, k.Cluster, time.Minute)
}

// TestNeutronErrorIsVisible points the controller at a subnet that does not
// exist: the pod gets a Warning Event and its KuryrPort a False condition,
// and the controller keeps running.
func TestNeutronErrorIsVisible(t *testing.T) {
	c := framework.Connect(t)
	k := c.ConnectKuryr(t)
	// The namespace first: at cleanup the controller is restarted with the
	// right subnet before the namespace goes, so that its pod does not
	// wait out its CNI ADD's timeout to be deleted.
	ns := framework.Name("e2e-err")
	c.CreateNamespace(t, ns)
	k.Controller(t, "restart", "--set", "neutron_defaults.pod_subnet=00000000-0000-0000-0000-000000000000")
	t.Cleanup(func() { k.Controller(t, "restart") })
	pod := c.CreatePods(t, ns, "p", 1)[0]
	ctx := context.Background()
	framework.Eventually(t, time.Minute, 300*time.Millisecond, "Ready=False on the KuryrPort", func() (bool, error) {
		var kp kuryrv1.KuryrPort
		if err := k.Get(ctx, client.ObjectKey{Namespace: ns, Name: pod.Name}, &kp); err != nil {
			return false, err
		}
		cond := meta.FindStatusCondition(kp.Status.Conditions, kuryrv1.ConditionReady)
		return cond != nil && cond.Status == metav1.ConditionFalse && cond.Reason == string(neutron.KindNotFound), fmt.Errorf("%+v", cond)
	})
	framework.Eventually(t, 30*time.Second, 300*time.Millisecond, "a Warning event on the pod", func() (bool, error) {
		evs, err := c.Kube.EventsV1().Events(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		for _, e := range evs.Items {
			if e.Regarding.Name == pod.Name && e.Type == corev1.EventTypeWarning && e.Reason == string(neutron.KindNotFound) {
				t.Logf("event: %s %s: %s", e.Reason, e.Action, e.Note)
				return true, nil
			}
		}
		return false, fmt.Errorf("%d events, none matching", len(evs.Items))
	})
}
