//go:build e2e

package nested

import (
	"context"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/portsbinding"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/security/groups"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/trunks"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/networks"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/subnets"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kuryrv1 "github.com/kuryr-k8s/kuryr/api/v1"
	"github.com/kuryr-k8s/kuryr/pkg/names"
	"github.com/kuryr-k8s/kuryr/test/e2e/framework"
	"github.com/kuryr-k8s/kuryr/test/e2e/guest/guestconfig"
)

// TestVLANPodInGuest: a nested-vlan pod in a real guest kernel (this
// machine's has no 802.1Q). The guest is a QEMU VM whose NIC is a Neutron
// port, the parent of a trunk, plugged into a hypervisor's br-int as Nova
// plugs one; a Node of that address, labelled nested-vlan, stands for it
// in Kubernetes (no kubelet runs in the guest). kuryr-controller makes the
// pod's port a subport of the trunk with a VLAN id; the guest plugs the
// KuryrPort's VIF with kuryr-daemon's own code (a VLAN interface of its NIC
// moved into a pod namespace), and the pod reaches a pod on a hypervisor
// and is reached by it through the subport, and through a Service whose
// load balancer's member is the subport; a NetworkPolicy's security groups
// on the subport drop what it does not admit; Neutron reports the subport
// ACTIVE with its parent, and the KuryrPort says so.
func TestVLANPodInGuest(t *testing.T) {
	c, k, ns := framework.Setup(t, "e2e-guest")
	hv := c.Nodes[len(c.Nodes)-1]
	vm, sub, mtu := guestPort(t, c, hv)
	node := guestNode(t, c, vm)
	server := server(t, c, ns, "web-hv", c.Nodes[0])
	pod := podOn(t, c, k, ns, "web-guest", node)
	all := c.WaitReady(t, []*corev1.Pod{server}, 3*time.Minute)
	server = all[0]
	kp := k.WaitKuryrPorts(t, []*corev1.Pod{pod}, 2*time.Minute)[ns+"/"+pod.Name]
	vif, _ := kp.Status.DefaultVIF()
	if vif.Nested == nil || vif.Nested.Mode != kuryrv1.NestedVLAN || vif.Nested.ParentPortID != vm.ID {
		t.Fatalf("the pod's VIF %+v sits %+v, want a subport of VM port %s", vif, vif.Nested, vm.ID)
	}
	podIP, _, _ := strings.Cut(vif.IPs[0].Address, "/")
	t.Logf("the pod's port %s is a subport of trunk %s with VLAN %d (%s)", vif.PortID, vif.Nested.TrunkID, vif.Nested.VLANID, podIP)

	start := time.Now()
	g := bootGuest(t, c, hv, vm.ID, vm.MACAddress, guestconfig.Config{
		MAC: vm.MACAddress, Address: fmt.Sprintf("%s/%d", vm.FixedIPs[0].IPAddress, maskBits(t, sub.CIDR)),
		Gateway: sub.GatewayIP, MTU: mtu, VIF: vif,
		Get: net.JoinHostPort(server.Status.PodIP, "8080"), Serve: 900, ServeReply: "web-guest"})
	plugged := g.wait(t, "GUEST-PLUGGED", 3*time.Minute)
	t.Logf("plugged in the guest %s after boot started", time.Since(start).Round(time.Millisecond))
	if want := fmt.Sprintf("kind=vlan vlan=%d mac=%s", vif.Nested.VLANID, vif.MACAddress); !strings.HasPrefix(plugged, want) {
		t.Errorf("the guest's pod interface: %s, want %s", plugged, want)
	}
	t.Run("guest-pod-to-hypervisor-pod", func(t *testing.T) {
		if got := g.wait(t, "GUEST-GOT", 2*time.Minute); got != server.Name {
			t.Fatalf("the guest's pod GET %s:8080: %q, want %q", server.Status.PodIP, got, server.Name)
		}
	})
	t.Run("hypervisor-pod-to-guest-pod", func(t *testing.T) {
		eventuallyGets(t, server, podIP, "web-guest")
	})
	t.Run("service-with-a-subport-member", func(t *testing.T) {
		// The guest has no kubelet to report the pod's address, so the
		// Service's endpoints are a user's EndpointSlice naming it: its
		// load balancer's member is the subport's address.
		ip := selectorless(t, c, ns, "guest-web", podIP)
		start := time.Now()
		framework.Eventually(t, 3*time.Minute, 2*time.Second, server.Name+" reaches the guest's pod through "+ip, func() (bool, error) {
			out, _ := framework.Exec(t, server, "sh", "-c", get(ip, 80))
			return strings.TrimSpace(out) == "web-guest", fmt.Errorf("answered %q", out)
		})
		t.Logf("ClusterIP %s answered by the guest's pod %s after the Service's creation", ip, time.Since(start).Round(time.Millisecond))
	})
	t.Run("policy-on-the-subport", func(t *testing.T) {
		// A policy admitting only pods labelled role=trusted (none) to the
		// guest's pod: the subport's security groups drop the hypervisor
		// pod's connections; deleted, they pass again.
		np := denyIngress(t, c, ns)
		denied := 0 // in a row: one silent answer could be a hiccup
		framework.Eventually(t, time.Minute, time.Second, "the guest's pod refuses "+server.Name, func() (bool, error) {
			out, _ := framework.Exec(t, server, "sh", "-c", "exec 2>/dev/null; "+get(podIP, 8080))
			if denied++; strings.Contains(out, "web-guest") {
				denied = 0
			}
			return denied >= 3, fmt.Errorf("answered %q (%d refusals in a row)", out, denied)
		})
		if err := c.Kube.NetworkingV1().NetworkPolicies(ns).Delete(context.Background(), np, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		eventuallyGets(t, server, podIP, "web-guest")
	})
	t.Run("subport-active", func(t *testing.T) {
		framework.Eventually(t, time.Minute, time.Second, "the subport ACTIVE and the KuryrPort active", func() (bool, error) {
			p, err := ports.Get(context.Background(), c.OS.Network, vif.PortID).Extract()
			if err != nil {
				return false, err
			}
			kp := k.WaitKuryrPorts(t, []*corev1.Pod{pod}, time.Minute)[ns+"/"+pod.Name]
			v, _ := kp.Status.DefaultVIF()
			return p.Status == "ACTIVE" && v.Active, fmt.Errorf("subport %s (owner %s), VIF active %v", p.Status, p.DeviceOwner, v.Active)
		})
		var p struct {
			ports.Port
			portsbinding.PortsBindingExt
		}
		if err := ports.Get(context.Background(), c.OS.Network, vif.PortID).ExtractInto(&p); err != nil {
			t.Fatal(err)
		}
		t.Logf("ML2/OVN reports the subport: status %s, device_owner %s, binding:host_id %q, vif_type %s",
			p.Status, p.DeviceOwner, p.HostID, p.VIFType)
	})
}

// selectorless creates a Service without selector on port 80 whose one
// endpoint, in a user's EndpointSlice, is ip:8080, and returns its ClusterIP.
func selectorless(t *testing.T, c *framework.Cloud, ns, name, ip string) string {
	t.Helper()
	ctx := context.Background()
	svc, err := c.Kube.CoreV1().Services(ns).Create(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080)}}}},
		metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	es := &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Namespace: ns, Name: name + "-1", Labels: map[string]string{discoveryv1.LabelServiceName: name}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("http"), Port: ptr.To[int32](8080), Protocol: ptr.To(corev1.ProtocolTCP)}},
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{ip}}},
	}
	if _, err := c.Kube.DiscoveryV1().EndpointSlices(ns).Create(ctx, es, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return svc.Spec.ClusterIP
}

// denyIngress creates a policy admitting to the test pods of ns (the
// guest's pod; the hypervisor's server is labelled otherwise) only pods
// labelled role=trusted, and returns its name.
func denyIngress(t *testing.T, c *framework.Cloud, ns string) string {
	t.Helper()
	np := &networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "guest-trusted-only"},
		Spec: networkingv1.NetworkPolicySpec{
			PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{"app": names.E2EApp}},
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

// guestPort is a VM's port on the worker network bound to hypervisor node
// (as Nova makes an instance's), the parent of a trunk, with its subnet.
func guestPort(t *testing.T, c *framework.Cloud, node string) (*ports.Port, *subnets.Subnet, int) {
	t.Helper()
	ctx := context.Background()
	nets, err := networks.List(c.OS.Network, networks.ListOpts{Name: "kuryr-worker-net"}).AllPages(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ns, err := networks.ExtractNetworks(nets)
	if err != nil || len(ns) != 1 || len(ns[0].Subnets) == 0 {
		t.Fatalf("the worker network: %v (%d found): the local cloud makes it with its VM nodes", err, len(ns))
	}
	sub, err := subnets.Get(ctx, c.OS.Network, ns[0].Subnets[0]).Extract()
	if err != nil {
		t.Fatal(err)
	}
	sgs, err := groups.List(c.OS.Network, groups.ListOpts{Name: "kuryr-worker-nodes"}).AllPages(ctx)
	if err != nil {
		t.Fatal(err)
	}
	sg, err := groups.ExtractGroups(sgs)
	if err != nil || len(sg) != 1 {
		t.Fatalf("the VM nodes' security group: %v (%d found)", err, len(sg))
	}
	up, group := true, []string{sg[0].ID}
	p, err := ports.Create(ctx, c.OS.Network, portsbinding.CreateOptsExt{CreateOptsBuilder: ports.CreateOpts{
		Name: framework.Name("guest"), NetworkID: ns[0].ID, ProjectID: c.ProjectID, AdminStateUp: &up,
		DeviceOwner: "compute:nova", DeviceID: framework.Name("guest"), SecurityGroups: &group}, HostID: node}).Extract()
	if err != nil {
		t.Fatalf("create the guest's port: %v", err)
	}
	tr, err := trunks.Create(ctx, c.OS.Network, trunks.CreateOpts{Name: p.Name, PortID: p.ID, ProjectID: c.ProjectID}).Extract()
	if err != nil {
		_ = ports.Delete(ctx, c.OS.Network, p.ID).ExtractErr()
		t.Fatalf("create the guest's trunk: %v", err)
	}
	t.Cleanup(func() {
		// As Nova does when an instance goes: unbind its port, then the
		// trunk (Neutron refuses to delete a trunk's parent port or a
		// subport), then the port.
		ctx, host := context.Background(), ""
		if _, err := ports.Update(ctx, c.OS.Network, p.ID, portsbinding.UpdateOptsExt{UpdateOptsBuilder: ports.UpdateOpts{},
			HostID: &host}).Extract(); err != nil {
			t.Errorf("unbind the guest's port: %v", err)
		}
		if err := trunks.Delete(ctx, c.OS.Network, tr.ID).ExtractErr(); err != nil {
			t.Errorf("delete the guest's trunk: %v", err)
		}
		if err := ports.Delete(ctx, c.OS.Network, p.ID).ExtractErr(); err != nil {
			t.Errorf("delete the guest's port: %v", err)
		}
	})
	var withMTU struct {
		MTU int `json:"mtu"`
	}
	if err := networks.Get(ctx, c.OS.Network, ns[0].ID).ExtractInto(&withMTU); err != nil || withMTU.MTU == 0 {
		t.Fatalf("the worker network's MTU: %v (%d)", err, withMTU.MTU)
	}
	return p, sub, withMTU.MTU
}

// guestNode is a Node standing for the guest (its address the VM port's,
// labelled nested-vlan); no kubelet runs for it.
func guestNode(t *testing.T, c *framework.Cloud, vm *ports.Port) string {
	t.Helper()
	ctx := context.Background()
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: vm.Name, Labels: map[string]string{kuryrv1.PodVIFLabel: "nested-vlan"}},
		Spec: corev1.NodeSpec{Taints: []corev1.Taint{{Key: framework.VMNodeTaint, Effect: corev1.TaintEffectNoSchedule}}}}
	created, err := c.Kube.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Kube.CoreV1().Nodes().Delete(context.Background(), n.Name, metav1.DeleteOptions{}) })
	patch := fmt.Sprintf(`{"status":{"addresses":[{"type":"InternalIP","address":%q}]}}`, vm.FixedIPs[0].IPAddress)
	if _, err := c.Kube.CoreV1().Nodes().Patch(ctx, created.Name, types.MergePatchType, []byte(patch), metav1.PatchOptions{},
		"status"); err != nil {
		t.Fatal(err)
	}
	return n.Name
}

// podOn is a pod bound to node (no scheduler, no kubelet: it stays
// Pending, but kuryr gives it its port), force-deleted at cleanup, which
// waits until kuryr has released its port (with pools off, the local
// cloud's default, its subport is detached and deleted before the trunk
// goes).
func podOn(t *testing.T, c *framework.Cloud, k *framework.Kuryr, ns, name, node string) *corev1.Pod {
	t.Helper()
	p := c.TestPod(ns, name, node)
	p.Spec.Tolerations = []corev1.Toleration{{Operator: corev1.TolerationOpExists}}
	created, err := c.Kube.CoreV1().Pods(ns).Create(context.Background(), p, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		zero := int64(0)
		_ = c.Kube.CoreV1().Pods(ns).Delete(context.Background(), name, metav1.DeleteOptions{GracePeriodSeconds: &zero})
		framework.Eventually(t, 2*time.Minute, time.Second, "the pod's KuryrPort released", func() (bool, error) {
			var kp kuryrv1.KuryrPort
			err := k.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &kp)
			return apierrors.IsNotFound(err), fmt.Errorf("KuryrPort: %v", err)
		})
	})
	return created
}

func maskBits(t *testing.T, cidr string) int {
	t.Helper()
	_, n, err := net.ParseCIDR(cidr)
	if err != nil {
		t.Fatal(err)
	}
	ones, _ := n.Mask.Size()
	return ones
}
