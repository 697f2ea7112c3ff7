//go:build e2e

package nested

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/portsbinding"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/trunks"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kuryrv1 "github.com/kuryr-k8s/kuryr/api/v1"
	"github.com/kuryr-k8s/kuryr/pkg/names"
	"github.com/kuryr-k8s/kuryr/test/e2e/framework"
)

// TestPodsOnGuestNode: a Kubernetes node that is a real VM of the cloud (a
// QEMU guest, `kuryr-ctl.sh guest start`: its NIC the parent of a trunk,
// kubelet, containerd and kuryr-daemon-nested-vlan inside) runs nested-vlan
// pods. Each pod's port is a subport of the VM's trunk with a VLAN id of its
// own, its interface a VLAN interface of the VM's NIC; the VM's kubelet
// probes them; they reach and are reached by pods on a hypervisor and on
// the same VM, directly and through a ClusterIP Service whose backends they
// are (from the same VM too: each subport is a port of its own); they ask
// the cluster's DNS; a NetworkPolicy applies on their subports; a deleted
// pod's subport leaves the trunk and Neutron. Then with pools of subports
// (vif_pool_driver = neutron): the guest's pool is made of subports of its
// trunk, pods take them, a released one goes back, and the powered-off
// guest's pool is detached and deleted.
func TestPodsOnGuestNode(t *testing.T) {
	c, k, ns := framework.Setup(t, "e2e-guestnode")
	if len(c.GuestNodes) == 0 {
		t.Fatal("the local cloud knows no guest node: it was brought up with KURYR_CLOUD_GUEST_NODES=\"\"")
	}
	node := c.GuestNodes[0]
	bootGuestNode(t, k, node)
	deletePodsFirst(t, c, ns) // while the guest's kubelet can still stop them
	onGuest := []*corev1.Pod{guestServer(t, c, ns, "web-guest-0", node), guestServer(t, c, ns, "web-guest-1", node)}
	onHV := server(t, c, ns, "web-hv", c.Nodes[0])
	start := time.Now()
	all := c.WaitReady(t, append(slices.Clone(onGuest), onHV), 3*time.Minute)
	t.Logf("2 pods on guest node %s and 1 on %s Ready (probed by their kubelets) %s after creation", node, c.Nodes[0],
		time.Since(start).Round(time.Millisecond))
	onGuest, onHV = all[:2], all[2]
	vifs := subportVIFs(t, c, k, ns, onGuest)

	t.Run("subports-active", func(t *testing.T) {
		// ML2/OVN gives a subport its parent's status; the KuryrPort says
		// what Neutron says (wait_for_usable = neutron-active).
		for name, v := range vifs {
			if !v.Active {
				t.Errorf("%s's VIF is not active in its KuryrPort, yet the pod was Ready", name)
			}
			var p struct {
				ports.Port
				portsbinding.PortsBindingExt
			}
			if err := ports.Get(context.Background(), c.OS.Network, v.PortID).ExtractInto(&p); err != nil {
				t.Fatal(err)
			}
			if p.Status != "ACTIVE" || p.DeviceOwner != "trunk:subport" {
				t.Errorf("%s's subport: status %s, device_owner %s; want ACTIVE, trunk:subport", name, p.Status, p.DeviceOwner)
			}
			t.Logf("ML2/OVN reports %s's subport: status %s, device_owner %s, binding:host_id %q, vif_type %s",
				name, p.Status, p.DeviceOwner, p.HostID, p.VIFType)
		}
	})
	t.Run("pod-to-pod", func(t *testing.T) { eachReachesEachOther(t, all) })
	t.Run("clusterip-from-a-hypervisor-and-the-same-vm", func(t *testing.T) {
		svc := service(t, c, ns)
		t.Cleanup(func() {
			if t.Failed() {
				c.LogServiceState(t, k, ns, svc.Name)
			}
		})
		for _, from := range []*corev1.Pod{onHV, onGuest[0]} {
			framework.Eventually(t, 3*time.Minute, 2*time.Second, "the Service reaches its 3 backends from "+from.Name, func() (bool, error) {
				// 15 GETs in one exec: each exec is a runc process,
				// seconds of the emulated guest's only vCPU.
				seen := map[string]bool{}
				out, _ := framework.Exec(t, from, "sh", "-c", "for i in $(seq 15); do "+get(svc.Spec.ClusterIP, 80)+"; done")
				for _, l := range strings.Split(out, "\n") {
					seen[strings.TrimSpace(l)] = true
				}
				return seen[onGuest[0].Name] && seen[onGuest[1].Name] && seen[onHV.Name], fmt.Errorf("answered by %v", seen)
			})
		}
	})
	t.Run("dns-from-a-guest-pod", func(t *testing.T) {
		fqdn, ip := "web-nested."+ns+".svc.cluster.local", clusterIP(t, c, ns)
		framework.Eventually(t, time.Minute, 2*time.Second, "nslookup "+fqdn+" from "+onGuest[1].Name, func() (bool, error) {
			out, err := framework.Exec(t, onGuest[1], "nslookup", fqdn)
			return err == nil && answers(out, ip), fmt.Errorf("%v: %s", err, out)
		})
	})
	t.Run("policy-on-the-subports", func(t *testing.T) {
		// Only pods labelled role=trusted (none) may reach the guest's
		// pods: their subports' security groups drop the others'
		// connections; the policy deleted, they pass again.
		np := isolateGuestPods(t, c, ns)
		for _, to := range onGuest {
			denied := 0 // in a row: one silent answer could be a hiccup
			framework.Eventually(t, time.Minute, time.Second, to.Name+" refuses "+onHV.Name, func() (bool, error) {
				out, _ := framework.Exec(t, onHV, "sh", "-c", "exec 2>/dev/null; "+get(to.Status.PodIP, 8080))
				if denied++; strings.Contains(out, to.Name) {
					denied = 0
				}
				return denied >= 3, fmt.Errorf("answered %q (%d refusals in a row)", out, denied)
			})
		}
		if err := c.Kube.NetworkingV1().NetworkPolicies(ns).Delete(context.Background(), np, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		for _, to := range onGuest {
			eventuallyGets(t, onHV, to.Status.PodIP, to.Name)
		}
	})
	t.Run("deleted-pod-leaves-the-trunk", func(t *testing.T) {
		gone := onGuest[1]
		v := vifs[gone.Name]
		if err := c.Kube.CoreV1().Pods(ns).Delete(context.Background(), gone.Name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		framework.Eventually(t, 2*time.Minute, time.Second, "the subport of "+gone.Name+" off the trunk and deleted", func() (bool, error) {
			subs, err := trunks.GetSubports(context.Background(), c.OS.Network, v.Nested.TrunkID).Extract()
			if err != nil {
				return false, err
			}
			if slices.ContainsFunc(subs, func(s trunks.Subport) bool { return s.PortID == v.PortID }) {
				return false, fmt.Errorf("still a subport of trunk %s", v.Nested.TrunkID)
			}
			_, err = ports.Get(context.Background(), c.OS.Network, v.PortID).Extract()
			return gophercloud.ResponseCodeIs(err, 404), fmt.Errorf("the port: %v", err)
		})
	})
	t.Run("pools-of-subports", func(t *testing.T) {
		subportPools(t, c, k, ns, node, onHV)
	})
}

// subportPools: the controller restarted with pools of 3, the guest node's
// pool is 3 subports of its trunk; two pods take pooled subports and are
// reached; a deleted pod's subport goes back to the pool, still attached;
// the guest powered off and its Node deleted, its pool is detached and
// deleted.
func subportPools(t *testing.T, c *framework.Cloud, k *framework.Kuryr, ns, node string, client *corev1.Pod) {
	t.Cleanup(func() { k.Controller(t, "restart") }) // first: a failed restart may have saved the flags
	k.Controller(t, "restart", "--set", "kubernetes.vif_pool_driver=neutron",
		"--set", "vif_pool.ports_pool_min=3", "--set", "vif_pool.ports_pool_batch=3")
	start := time.Now()
	pooled := waitPool(t, c, k, node, func(n int) bool { return n >= 3 })
	t.Logf("%s's pool: %d subports of its trunk %s after the controller's restart", node, len(pooled), time.Since(start).Round(time.Millisecond))
	pods := []*corev1.Pod{guestServer(t, c, ns, "pooled-0", node), guestServer(t, c, ns, "pooled-1", node)}
	start = time.Now()
	pods = c.WaitReady(t, pods, 3*time.Minute)
	t.Logf("2 pods on pooled subports Ready %s after creation", time.Since(start).Round(time.Millisecond))
	vifs := subportVIFs(t, c, k, ns, pods)
	for _, p := range pods {
		if !pooled[vifs[p.Name].PortID] {
			t.Errorf("%s's port %s was not in the pool %v", p.Name, vifs[p.Name].PortID, pooled)
		}
		eventuallyGets(t, client, p.Status.PodIP, p.Name)
	}
	released := vifs[pods[1].Name].PortID
	if err := c.Kube.CoreV1().Pods(ns).Delete(context.Background(), pods[1].Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitPool(t, c, k, node, func(int) bool { return true }, released)
	t.Logf("%s's subport %s back in the pool, still attached", pods[1].Name, released)
	// The guest's pods gone with their kubelet alive, then the guest.
	deleteGuestPods(t, c, ns)
	k.Ctl(t, "guest", "stop", node)
	gone := time.Now()
	framework.Eventually(t, 2*time.Minute, time.Second, "the powered-off guest's pool deleted", func() (bool, error) {
		left := 0
		for id := range pooled {
			_, err := ports.Get(context.Background(), c.OS.Network, id).Extract()
			if !gophercloud.ResponseCodeIs(err, 404) {
				left++
			}
		}
		n := len(poolPorts(t, c, k, node))
		return left == 0 && n == 0, fmt.Errorf("%d of the pooled ports left, %d tagged for %s", left, n, node)
	})
	t.Logf("the gone guest's pool detached and deleted %s after its Node", time.Since(gone).Round(time.Millisecond))
}

// waitPool waits until node's pool (ports tagged for it) has a size ok
// accepts, holds every port of want, and each of its ports is a subport of
// the node's trunk; returns the pool's ports.
func waitPool(t *testing.T, c *framework.Cloud, k *framework.Kuryr, node string, ok func(int) bool, want ...string) map[string]bool {
	t.Helper()
	var pool map[string]bool
	framework.Eventually(t, 2*time.Minute, time.Second, node+"'s pool of subports", func() (bool, error) {
		pool = poolPorts(t, c, k, node)
		tr, err := trunks.List(c.OS.Network, trunks.ListOpts{Name: node + "-trunk"}).AllPages(context.Background())
		if err != nil {
			return false, err
		}
		all, err := trunks.ExtractTrunks(tr)
		if err != nil || len(all) != 1 {
			return false, fmt.Errorf("trunk %s-trunk: %v (%d found)", node, err, len(all))
		}
		attached := map[string]bool{}
		for _, s := range all[0].Subports {
			attached[s.PortID] = true
		}
		for id := range pool {
			if !attached[id] {
				return false, fmt.Errorf("pooled port %s not a subport of %s", id, all[0].ID)
			}
		}
		for _, id := range want {
			if !pool[id] {
				return false, fmt.Errorf("port %s not in the pool %v", id, pool)
			}
		}
		return ok(len(pool)), fmt.Errorf("%d pooled subports", len(pool))
	})
	return pool
}

// poolPorts are the ports of node's pool.
func poolPorts(t *testing.T, c *framework.Cloud, k *framework.Kuryr, node string) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	for _, p := range c.ClusterPorts(t, k.Cluster) {
		if names.PoolNodeOf(p.Tags) == node {
			out[p.ID] = true
		}
	}
	return out
}

// deleteGuestPods deletes ns's pods labelled where=guest and waits until
// they are gone.
func deleteGuestPods(t *testing.T, c *framework.Cloud, ns string) {
	t.Helper()
	ctx, sel := context.Background(), metav1.ListOptions{LabelSelector: "where=guest"}
	if err := c.Kube.CoreV1().Pods(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, sel); err != nil {
		t.Fatal(err)
	}
	framework.Eventually(t, 2*time.Minute, time.Second, "the guest's pods gone", func() (bool, error) {
		l, err := c.Kube.CoreV1().Pods(ns).List(ctx, sel)
		return err == nil && len(l.Items) == 0, fmt.Errorf("%v (%d left)", err, len(l.Items))
	})
}

// bootGuestNode boots guest node (`kuryr-ctl.sh guest start`: Ready, its
// kuryr-daemon Ready) and powers it off at cleanup (its Node deleted).
func bootGuestNode(t *testing.T, k *framework.Kuryr, node string) {
	t.Helper()
	t.Cleanup(func() { k.Ctl(t, "guest", "stop", node) })
	start := time.Now()
	k.Ctl(t, "guest", "start", node)
	t.Logf("guest node %s booted, Ready with its kuryr-daemon %s after QEMU started its initramfs build",
		node, time.Since(start).Round(time.Millisecond))
}

// guestServer is server on a guest node, labelled where=guest, asking the
// cluster's DNS.
func guestServer(t *testing.T, c *framework.Cloud, ns, name, node string) *corev1.Pod {
	t.Helper()
	p := c.TestPod(ns, name, node)
	p.Labels = map[string]string{"app": "web-nested", "where": "guest"}
	p.Spec.Containers[0].Ports = []corev1.ContainerPort{{Name: "web", ContainerPort: 8080}}
	p.Spec.DNSPolicy = corev1.DNSClusterFirst
	// The guest is emulated (TCG, one vCPU): its httpd may answer a probe
	// seconds late while runc starts an exec. Probes stay real, with
	// timeouts for that speed: a liveness kill at the default 1 s would
	// test the emulator, not kuryr.
	c0 := &p.Spec.Containers[0]
	c0.ReadinessProbe.TimeoutSeconds = 5
	c0.LivenessProbe.TimeoutSeconds, c0.LivenessProbe.FailureThreshold = 10, 6
	created, err := c.Kube.CoreV1().Pods(ns).Create(context.Background(), p, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return created
}

// deletePodsFirst deletes ns's pods at cleanup and waits until they are
// gone, before the cleanups registered earlier (the guest's power-off).
func deletePodsFirst(t *testing.T, c *framework.Cloud, ns string) {
	t.Cleanup(func() {
		ctx := context.Background()
		if err := c.Kube.CoreV1().Pods(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil {
			t.Errorf("delete the pods of %s: %v", ns, err)
			return
		}
		framework.Eventually(t, 2*time.Minute, time.Second, "the pods of "+ns+" gone", func() (bool, error) {
			l, err := c.Kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
			return err == nil && len(l.Items) == 0, fmt.Errorf("%v (%d left)", err, len(l.Items))
		})
	})
}

// subportVIFs checks that the pods' KuryrPorts say each sits on a subport
// of one trunk with a VLAN id of its own, and that Neutron's trunk says so,
// and returns their VIFs by pod name.
func subportVIFs(t *testing.T, c *framework.Cloud, k *framework.Kuryr, ns string, pods []*corev1.Pod) map[string]kuryrv1.VIF {
	t.Helper()
	out := map[string]kuryrv1.VIF{}
	ids := map[int]string{}
	trunk := ""
	for key, kp := range k.WaitKuryrPorts(t, pods, 2*time.Minute) {
		v, _ := kp.Status.DefaultVIF()
		if v.Nested == nil || v.Nested.Mode != kuryrv1.NestedVLAN || (trunk != "" && v.Nested.TrunkID != trunk) {
			t.Fatalf("KuryrPort %s: nested %+v, want a subport of one trunk", key, v.Nested)
		}
		if other, dup := ids[v.Nested.VLANID]; dup {
			t.Fatalf("KuryrPort %s: VLAN %d, also %s's", key, v.Nested.VLANID, other)
		}
		trunk, ids[v.Nested.VLANID] = v.Nested.TrunkID, key
		out[kp.Name] = v
		t.Logf("%s: port %s, subport of trunk %s with VLAN %d", key, v.PortID, trunk, v.Nested.VLANID)
	}
	subs, err := trunks.GetSubports(context.Background(), c.OS.Network, trunk).Extract()
	if err != nil {
		t.Fatal(err)
	}
	for name, v := range out {
		if !slices.Contains(subs, trunks.Subport{PortID: v.PortID, SegmentationType: "vlan", SegmentationID: v.Nested.VLANID}) {
			t.Errorf("trunk %s's subports %+v lack %s's port %s with VLAN %d", trunk, subs, name, v.PortID, v.Nested.VLANID)
		}
	}
	return out
}

// isolateGuestPods creates a policy admitting to ns's pods labelled
// where=guest only pods labelled role=trusted, and returns its name.
func isolateGuestPods(t *testing.T, c *framework.Cloud, ns string) string {
	t.Helper()
	np := &networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "guest-trusted-only"},
		Spec: networkingv1.NetworkPolicySpec{
			PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{"where": "guest"}},
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress},
			Ingress: []networkingv1.NetworkPolicyIngressRule{{From: []networkingv1.NetworkPolicyPeer{{
				PodSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"role": "trusted"}}}}}},
		}}
	if _, err := c.Kube.NetworkingV1().NetworkPolicies(ns).Create(context.Background(), np, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { // when the subtest stops before deleting it
		_ = c.Kube.NetworkingV1().NetworkPolicies(ns).Delete(context.Background(), np.Name, metav1.DeleteOptions{})
	})
	return np.Name
}
