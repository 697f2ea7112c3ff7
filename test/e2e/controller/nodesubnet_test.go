//go:build e2e

package controller

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kuryrv1 "github.com/kuryr-k8s/kuryr/api/v1"
	"github.com/kuryr-k8s/kuryr/pkg/names"
	"github.com/kuryr-k8s/kuryr/pkg/neutron"
	"github.com/kuryr-k8s/kuryr/test/e2e/framework"
)

// kuryrNamespace holds the nodes' KuryrNetworks ([kubernetes]
// controller_ha_namespace on the local cloud).
const kuryrNamespace = metav1.NamespaceSystem

// TestNodeSubnets: with pod_subnets_driver = node, every node gets its own
// network (a subnet from the pool, on the router), pods get their ports on
// their node's subnet and reach each other across nodes, with pools too.
// Switching back to the default driver leaves the nodes' networks (they
// belong to live nodes); the test then deletes their KuryrNetworks and
// kuryr removes the networks.
func TestNodeSubnets(t *testing.T) {
	c := framework.Connect(t)
	k := c.ConnectKuryr(t)
	node := []string{"--set", "kubernetes.pod_subnets_driver=node"}
	k.Controller(t, "restart", node...)
	t.Cleanup(func() { k.Controller(t, "restart") })
	nets := waitNodeNetworks(t, c, k)

	t.Run("on demand", func(t *testing.T) { podsOnNodeSubnets(t, c, k, nets, false) })

	pools := append(node, "--set", "kubernetes.vif_pool_driver=neutron",
		"--set", "vif_pool.ports_pool_min=2", "--set", "vif_pool.ports_pool_batch=2")
	k.Controller(t, "restart", pools...)
	t.Run("pools", func(t *testing.T) { podsOnNodeSubnets(t, c, k, nets, true) })

	// Back to the default driver, pools off: the sweep (every 2 s here)
	// deletes the unused pooled ports; the nodes' networks stay.
	k.Controller(t, "restart", "--set", "controller.cleanup_period=2")
	c.WaitNoClusterPorts(t, k.Cluster, 2*time.Minute)
	for n, kn := range waitNodeNetworks(t, c, k) {
		if kn.Status.NetID != nets[n].Status.NetID {
			t.Errorf("node %s: network %s after switching back, was %s", n, kn.Status.NetID, nets[n].Status.NetID)
		}
	}
	removeNodeNetworks(t, c, k)
}

// waitNodeNetworks waits until every node has a ready KuryrNetwork, owned by
// the node, whose network is named and tagged after it, with subnets from
// the pool that differ from node to node and from the default pod subnet.
func waitNodeNetworks(t *testing.T, c *framework.Cloud, k *framework.Kuryr) map[string]*kuryrv1.KuryrNetwork {
	t.Helper()
	ctx := context.Background()
	out := map[string]*kuryrv1.KuryrNetwork{}
	framework.Eventually(t, 2*time.Minute, 500*time.Millisecond, "a ready KuryrNetwork per node", func() (bool, error) {
		for _, n := range c.Nodes {
			var kn kuryrv1.KuryrNetwork
			if err := k.Get(ctx, client.ObjectKey{Namespace: kuryrNamespace, Name: kuryrv1.NodeNetworkName(n)}, &kn); err != nil {
				return false, fmt.Errorf("node %s: %w", n, err)
			}
			if !kn.Status.Ready() {
				return false, fmt.Errorf("node %s: KuryrNetwork not ready: %+v", n, kn.Status.Conditions)
			}
			out[n] = &kn
		}
		return true, nil
	})
	pod, err := neutron.New(c.OS.Network).GetSubnet(ctx, c.PodSubnet)
	if err != nil {
		t.Fatal(err)
	}
	pool := netip.MustParsePrefix("10.10.0.0/16")
	cidrs := map[string]string{}
	for n, kn := range out {
		owner := metav1.GetControllerOf(kn)
		cidr, err := netip.ParsePrefix(kn.Status.SubnetCIDR)
		switch {
		case owner == nil || owner.Kind != "Node" || owner.Name != n:
			t.Errorf("node %s: KuryrNetwork owned by %+v", n, owner)
		case kn.Spec.NodeName != n:
			t.Errorf("node %s: KuryrNetwork spec %+v", n, kn.Spec)
		case err != nil || !pool.Contains(cidr.Addr()) || kn.Status.SubnetCIDR == pod.CIDR:
			t.Errorf("node %s: subnet %q, want one of the pool %s other than the pod subnet %s", n, kn.Status.SubnetCIDR, pool, pod.CIDR)
		case cidrs[kn.Status.SubnetCIDR] != "":
			t.Errorf("nodes %s and %s share the subnet %s", cidrs[kn.Status.SubnetCIDR], n, kn.Status.SubnetCIDR)
		}
		cidrs[kn.Status.SubnetCIDR] = n
		net, err := neutron.New(c.OS.Network).GetNetwork(ctx, kn.Status.NetID)
		if err != nil {
			t.Errorf("node %s: network %s: %v", n, kn.Status.NetID, err)
			continue
		}
		if net.Name != names.NodeNetworkName(k.Cluster, n) || !slices.Contains(net.Tags, names.NodeNetworkTag(n)) ||
			!slices.Contains(net.Tags, names.ClusterTag(k.Cluster)) {
			t.Errorf("node %s: network %s named %q tagged %v", n, net.ID, net.Name, net.Tags)
		}
	}
	return out
}

// podsOnNodeSubnets runs a pod on each node: each gets a port on its
// node's subnet (a pooled one, with pools), and the pods reach each other
// both ways, from their own network namespaces.
func podsOnNodeSubnets(t *testing.T, c *framework.Cloud, k *framework.Kuryr, nets map[string]*kuryrv1.KuryrNetwork, pooled bool) {
	if pooled {
		waitPoolsOnNodeSubnets(t, c, k, nets)
	}
	ns := framework.Name("e2e-nodesub")
	c.CreateNamespace(t, ns)
	created := c.CreatePods(t, ns, "p", len(c.Nodes)) // one per node
	kps := k.WaitKuryrPorts(t, created, 2*time.Minute)
	pods := c.WaitRunning(t, created, 2*time.Minute)
	byID := map[string]neutron.Port{}
	for _, p := range c.ClusterPorts(t, k.Cluster) {
		byID[p.ID] = p
	}
	for _, p := range pods {
		kn := nets[p.Spec.NodeName]
		vif, _ := kps[p.Namespace+"/"+p.Name].Status.DefaultVIF()
		port := byID[vif.PortID]
		ip, err := netip.ParseAddr(p.Status.PodIP)
		cidr := netip.MustParsePrefix(kn.Status.SubnetCIDR)
		switch {
		case err != nil || !cidr.Contains(ip):
			t.Errorf("%s on %s: IP %s, want one of its node's subnet %s", p.Name, p.Spec.NodeName, p.Status.PodIP, kn.Status.SubnetCIDR)
		case vif.NetworkID != kn.Status.NetID || port.NetworkID != kn.Status.NetID:
			t.Errorf("%s on %s: port %s on network %s (VIF %s), want %s", p.Name, p.Spec.NodeName, port.ID, port.NetworkID, vif.NetworkID, kn.Status.NetID)
		case port.HostID != p.Spec.NodeName:
			t.Errorf("%s: port bound to %q, pod on %q", p.Name, port.HostID, p.Spec.NodeName)
		case pooled && (port.Name != "kuryr-pool-port" || names.PoolNodeOf(port.Tags) != p.Spec.NodeName):
			t.Errorf("%s: port %s (%s, tags %v), want a pooled port of %s", p.Name, port.ID, port.Name, port.Tags, p.Spec.NodeName)
		}
	}
	a, b := pods[0], pods[1]
	if a.Spec.NodeName == b.Spec.NodeName {
		t.Fatalf("both pods on %s", a.Spec.NodeName)
	}
	// Each node's subnet is new: its router interface is in Neutron before
	// the pods are Ready, but OVN programs the route between the two
	// subnets on its own time (seen: up to a few seconds on a busy 2-core
	// machine). How long is logged; more than 30 s fails.
	start := time.Now()
	for _, pair := range [][2]*corev1.Pod{{a, b}, {b, a}} {
		from, to := pair[0], pair[1]
		var out string
		err := framework.Poll(30*time.Second, time.Second, fmt.Sprintf("ping %s -> %s", from.Name, to.Name), func() (bool, error) {
			var err error
			out, err = framework.Exec(t, from, "ping", "-c", "1", "-W", "1", to.Status.PodIP)
			return err == nil, nil
		})
		if err != nil {
			t.Errorf("%v: %s", err, out)
		} else {
			t.Logf("ping %s -> %s answered %s after both pods were Ready", from.Name, to.Name, time.Since(start).Round(time.Millisecond))
		}
		out, err = framework.Exec(t, from, "sh", "-c", fmt.Sprintf(`printf 'GET / HTTP/1.0\r\n\r\n' | nc %s 8080`, to.Status.PodIP))
		if err != nil || !strings.Contains(out, to.Name) {
			t.Errorf("HTTP %s -> %s: %v: %q", from.Name, to.Name, err, out)
		}
	}
	c.DeleteNamespace(t, ns)
}

// waitPoolsOnNodeSubnets waits until every node's pool is filled, and
// checks that its ports are on the node's subnet, bound to the node.
func waitPoolsOnNodeSubnets(t *testing.T, c *framework.Cloud, k *framework.Kuryr, nets map[string]*kuryrv1.KuryrNetwork) {
	t.Helper()
	framework.Eventually(t, 2*time.Minute, 500*time.Millisecond, "pools filled", func() (bool, error) {
		free, err := c.PoolFree()
		for _, n := range c.Nodes {
			if free[n] < 2 {
				return false, fmt.Errorf("free ports %v (%v)", free, err)
			}
		}
		return true, nil
	})
	for _, p := range c.ClusterPorts(t, k.Cluster) {
		n := names.PoolNodeOf(p.Tags)
		kn, ok := nets[n]
		if n == "" || !ok {
			continue
		}
		if p.NetworkID != kn.Status.NetID || len(p.FixedIPs) == 0 || p.FixedIPs[0].SubnetID != kn.Status.SubnetID || p.HostID != n {
			t.Errorf("pooled port %s of %s: network %s, addresses %v, bound to %q; want network %s, subnet %s",
				p.ID, n, p.NetworkID, p.FixedIPs, p.HostID, kn.Status.NetID, kn.Status.SubnetID)
		}
	}
}

// removeNodeNetworks deletes the nodes' KuryrNetworks (nothing recreates
// them outside node mode) and waits until kuryr has removed them and their
// networks.
func removeNodeNetworks(t *testing.T, c *framework.Cloud, k *framework.Kuryr) {
	t.Helper()
	ctx := context.Background()
	// Every node's, the VM nodes' too: in node mode every node has a
	// network (a nested-vlan node's pods are subports on it).
	var all kuryrv1.KuryrNetworkList
	if err := k.List(ctx, &all, client.InNamespace(kuryrNamespace)); err != nil {
		t.Fatal(err)
	}
	for i := range all.Items {
		if kn := &all.Items[i]; kn.Spec.NodeName != "" {
			if err := k.Delete(ctx, kn); err != nil && !apierrors.IsNotFound(err) {
				t.Errorf("delete KuryrNetwork of %s: %v", kn.Spec.NodeName, err)
			}
		}
	}
	framework.Eventually(t, 2*time.Minute, time.Second, "the nodes' KuryrNetworks and networks gone", func() (bool, error) {
		var kns kuryrv1.KuryrNetworkList
		if err := k.List(ctx, &kns, client.InNamespace(kuryrNamespace)); err != nil {
			return false, err
		}
		for _, kn := range kns.Items {
			if kn.Spec.NodeName != "" {
				return false, fmt.Errorf("KuryrNetwork %s still there: %+v", kn.Name, kn.Status.Conditions)
			}
		}
		nets, err := neutron.New(c.OS.Network).ListNetworks(ctx, []string{names.ClusterTag(k.Cluster)})
		if err != nil {
			return false, err
		}
		for _, n := range nets {
			if node := names.NodeNetworkOf(n.Tags); node != "" {
				return false, fmt.Errorf("network %s of node %s still there", n.ID, node)
			}
		}
		return true, nil
	})
}
