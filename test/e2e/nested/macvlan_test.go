//go:build e2e

// Package nested tests pods on VM nodes: Kubernetes nodes that are VMs of
// the cloud (the local cloud's KURYR_CLOUD_VM_NODES: a namespace whose one
// NIC is a Neutron port plugged into a hypervisor's br-int as Nova plugs
// one, running its own containerd and kubelet, no OVS), whose pods are
// nested-macvlan: each pod's address and MAC are an allowed address pair of
// the VM's port, and the pod a macvlan of the VM's NIC; and on guest nodes
// (KURYR_CLOUD_GUEST_NODES: QEMU guests with their own kernel, kubelet,
// containerd and kuryr-daemon), whose pods are nested-vlan: each pod's port
// a subport of the VM's trunk, the pod a VLAN interface of the VM's NIC.
package nested

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	kuryrv1 "github.com/kuryr-k8s/kuryr/api/v1"
	"github.com/kuryr-k8s/kuryr/pkg/controller/kuryrport"
	"github.com/kuryr-k8s/kuryr/pkg/controller/nested"
	"github.com/kuryr-k8s/kuryr/pkg/neutron"
	"github.com/kuryr-k8s/kuryr/test/e2e/framework"
)

// TestMacvlanPods: pods on a VM node become Ready (the VM's kubelet probes
// them), sit on the VM's port as allowed address pairs, and reach and are
// reached by pods on hypervisors, each other, a VM of the cloud and a
// ClusterIP Service whose backends they are; each gets a Warning that
// NetworkPolicies cannot be enforced for it; a pod on the VM asks the
// cluster DNS; a LoadBalancer Service's floating IP reaches them from
// outside; a deleted pod's pair leaves the VM's port.
func TestMacvlanPods(t *testing.T) {
	c, k, ns := framework.Setup(t, "e2e-nested")
	if len(c.VMNodes) == 0 {
		t.Fatal("the local cloud has no VM node: it was brought up with KURYR_CLOUD_VM_NODES=\"\" (make up brings kuryr-vm-1 by default)")
	}
	vmNode, hvNode := c.VMNodes[0], c.Nodes[0]
	onVM := []*corev1.Pod{server(t, c, ns, "web-vm-0", vmNode), server(t, c, ns, "web-vm-1", vmNode)}
	onHV := server(t, c, ns, "web-hv", hvNode)
	start := time.Now()
	all := c.WaitReady(t, append(slices.Clone(onVM), onHV), 3*time.Minute)
	t.Logf("2 pods on VM node %s and 1 on %s Ready (probed by their kubelets) %s after creation", vmNode, hvNode,
		time.Since(start).Round(time.Millisecond))
	onVM, onHV = all[:2], all[2]

	parent := vmPort(t, c, k, ns, onVM)
	t.Run("pairs-on-the-vm-port", func(t *testing.T) {
		waitPairs(t, c, parent, ips(onVM), nil)
	})
	t.Run("policies-not-enforced-warning", func(t *testing.T) {
		framework.Eventually(t, 30*time.Second, time.Second, "a Warning that policies are not enforced", func() (bool, error) {
			evs, err := c.Kube.CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{
				FieldSelector: "involvedObject.name=" + onVM[0].Name})
			if err != nil {
				return false, err
			}
			for _, e := range evs.Items {
				if e.Type == corev1.EventTypeWarning && e.Reason == kuryrport.ReasonPoliciesNotEnforced {
					return true, nil
				}
			}
			return false, fmt.Errorf("%d events, none %s", len(evs.Items), kuryrport.ReasonPoliciesNotEnforced)
		})
	})
	t.Run("pod-to-pod", func(t *testing.T) { eachReachesEachOther(t, all) })
	t.Run("vm-to-pod", func(t *testing.T) {
		vm := c.CreateVM(t, hvNode, "0")
		for _, p := range onVM {
			framework.Eventually(t, time.Minute, time.Second, "vm-0 reaches "+p.Name, func() (bool, error) {
				got, err := framework.HTTPGet(vm.Netns, p.Status.PodIP+":8080", 3*time.Second)
				return got == p.Name, fmt.Errorf("answered %q (%v)", got, err)
			})
		}
	})
	t.Run("clusterip-with-vm-backends", func(t *testing.T) {
		svc := service(t, c, ns)
		framework.Eventually(t, 3*time.Minute, 2*time.Second, "the Service reaches both VM pods from "+onHV.Name, func() (bool, error) {
			seen := map[string]bool{}
			for range 12 {
				out, _ := framework.Exec(t, onHV, "sh", "-c", get(svc.Spec.ClusterIP, 80))
				seen[strings.TrimSpace(out)] = true
			}
			return seen[onVM[0].Name] && seen[onVM[1].Name], fmt.Errorf("answered by %v", seen)
		})
	})
	t.Run("dns-from-a-vm-pod", func(t *testing.T) {
		// A pod on the VM node asks the cluster's DNS (CoreDNS behind the
		// kube-dns Service, on hypervisors) and reaches the Service by name.
		cl := c.TestPod(ns, "client-vm", vmNode)
		cl.Spec.DNSPolicy = corev1.DNSClusterFirst
		created, err := c.Kube.CoreV1().Pods(ns).Create(context.Background(), cl, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		cl = c.WaitReady(t, []*corev1.Pod{created}, 3*time.Minute)[0]
		t.Logf("the VM's pod %s Ready %s after its creation", cl.Name, time.Since(start).Round(time.Millisecond))
		svc, fqdn, ip := "web-nested."+ns, "web-nested."+ns+".svc.cluster.local", clusterIP(t, c, ns)
		start = time.Now()
		framework.Eventually(t, 2*time.Minute, 2*time.Second, "nslookup "+fqdn+" from "+cl.Name, func() (bool, error) {
			out, err := framework.Exec(t, cl, "nslookup", fqdn)
			return err == nil && answers(out, ip), fmt.Errorf("%v: %s", err, out)
		})
		t.Logf("%s resolved from the VM's pod %s after it was Ready", fqdn, time.Since(start).Round(time.Millisecond))
		// Answered by a backend on another node: one on the client's own VM
		// does not answer (docs/nested.md, "Not done yet").
		framework.Eventually(t, time.Minute, 2*time.Second, "http://"+svc+" from "+cl.Name, func() (bool, error) {
			out, err := framework.Exec(t, cl, "sh", "-c", get(svc, 80))
			got := strings.TrimSpace(out)
			return err == nil && strings.HasPrefix(got, "web-"), fmt.Errorf("%v: %q", err, got)
		})
	})
	t.Run("loadbalancer-fip-with-vm-backends", func(t *testing.T) {
		ip := loadBalancer(t, c, ns)
		outside := framework.OpenNetns(t, c.OutsideNetns)
		framework.Eventually(t, 3*time.Minute, time.Second, "both VM pods through the floating IP "+ip+" from outside", func() (bool, error) {
			seen := map[string]bool{}
			for range 12 {
				out, _ := framework.InNetns(context.Background(), outside.Path(), "busybox", "sh", "-c", getWith("busybox nc", ip, 80))
				seen[strings.TrimSpace(out)] = true
			}
			return seen[onVM[0].Name] && seen[onVM[1].Name], fmt.Errorf("answered by %v", seen)
		})
	})
	t.Run("deleted-pod-leaves-the-vm-port", func(t *testing.T) {
		gone := onVM[1]
		if err := c.Kube.CoreV1().Pods(ns).Delete(context.Background(), gone.Name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		waitPairs(t, c, parent, ips(onVM[:1]), ips(onVM[1:]))
	})
	t.Run("orphaned-pair-swept", func(t *testing.T) {
		// A pair whose port is gone (its KuryrPort force-removed) next to
		// a user's: the sweep (it runs when the controller starts) takes
		// off only the orphan.
		ctx := context.Background()
		nc := neutron.New(c.OS.Network)
		vm, err := nc.GetParentPort(ctx, parent)
		if err != nil {
			t.Fatal(err)
		}
		orphan := ports.AddressPair{IPAddress: "10.12.0.250", MACAddress: nested.MacvlanMAC("a-port-long-gone")}
		user := ports.AddressPair{IPAddress: "10.12.0.251", MACAddress: "02:42:0a:0c:00:fb"}
		pairs := append(slices.Clone(vm.AllowedAddressPairs), orphan, user)
		if err := nc.SetAddressPairs(ctx, parent, pairs, vm.RevisionNumber); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if vm, err := nc.GetParentPort(ctx, parent); err == nil {
				kept := slices.DeleteFunc(slices.Clone(vm.AllowedAddressPairs), func(p ports.AddressPair) bool { return p == user })
				_ = nc.SetAddressPairs(ctx, parent, kept, vm.RevisionNumber)
			}
		})
		start := time.Now()
		k.Controller(t, "restart")
		waitPairs(t, c, parent, append(ips(onVM[:1]), user.IPAddress), []string{orphan.IPAddress})
		t.Logf("orphaned pair swept %s after the controller restart; the pod's and the user's kept",
			time.Since(start).Round(time.Millisecond))
	})
}

func server(t *testing.T, c *framework.Cloud, ns, name, node string) *corev1.Pod {
	t.Helper()
	p := c.TestPod(ns, name, node)
	p.Labels = map[string]string{"app": "web-nested"}
	p.Spec.Containers[0].Ports = []corev1.ContainerPort{{Name: "web", ContainerPort: 8080}}
	created, err := c.Kube.CoreV1().Pods(ns).Create(context.Background(), p, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return created
}

func service(t *testing.T, c *framework.Cloud, ns string) *corev1.Service {
	t.Helper()
	s := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web-nested"}, Spec: corev1.ServiceSpec{
		Selector: map[string]string{"app": "web-nested"},
		Ports:    []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromString("web")}}}}
	created, err := c.Kube.CoreV1().Services(ns).Create(context.Background(), s, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return created
}

// clusterIP is the ClusterIP of the Service web-nested (made by the
// subtest clusterip-with-vm-backends).
func clusterIP(t *testing.T, c *framework.Cloud, ns string) string {
	t.Helper()
	svc, err := c.Kube.CoreV1().Services(ns).Get(context.Background(), "web-nested", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the Service web-nested (made by clusterip-with-vm-backends): %v", err)
	}
	return svc.Spec.ClusterIP
}

// answers says whether nslookup's output gives ip as an address (a word of
// a line, not a prefix of another address).
func answers(out, ip string) bool {
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "Address") && slices.Contains(strings.Fields(line), ip) {
			return true
		}
	}
	return false
}

// loadBalancer creates the LoadBalancer Service web-nested-lb over the
// same pods and returns the floating IP it publishes.
func loadBalancer(t *testing.T, c *framework.Cloud, ns string) string {
	t.Helper()
	s := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web-nested-lb"}, Spec: corev1.ServiceSpec{
		Type: corev1.ServiceTypeLoadBalancer, Selector: map[string]string{"app": "web-nested"},
		Ports: []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromString("web")}}}}
	if _, err := c.Kube.CoreV1().Services(ns).Create(context.Background(), s, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var ip string
	framework.Eventually(t, 3*time.Minute, time.Second, "status.loadBalancer.ingress of web-nested-lb", func() (bool, error) {
		cur, err := c.Kube.CoreV1().Services(ns).Get(context.Background(), s.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if len(cur.Status.LoadBalancer.Ingress) == 0 {
			return false, fmt.Errorf("no ingress yet")
		}
		ip = cur.Status.LoadBalancer.Ingress[0].IP
		return true, nil
	})
	return ip
}

// vmPort checks that the VM pods' KuryrPorts say they sit on one VM port
// as macvlans, and returns it.
func vmPort(t *testing.T, c *framework.Cloud, k *framework.Kuryr, ns string, pods []*corev1.Pod) string {
	t.Helper()
	parent := ""
	for name, kp := range k.WaitKuryrPorts(t, pods, time.Minute) {
		vif, _ := kp.Status.DefaultVIF()
		if vif.Nested == nil || vif.Nested.Mode != kuryrv1.NestedMacvlan || (parent != "" && vif.Nested.ParentPortID != parent) {
			t.Fatalf("KuryrPort %s/%s: nested %+v, want macvlan on the VM's port", ns, name, vif.Nested)
		}
		parent = vif.Nested.ParentPortID
	}
	return parent
}

// waitPairs waits until the VM port's allowed address pairs hold every
// address of want and none of gone.
func waitPairs(t *testing.T, c *framework.Cloud, parent string, want, gone []string) {
	t.Helper()
	framework.Eventually(t, time.Minute, time.Second, "the VM port's allowed address pairs", func() (bool, error) {
		p, err := ports.Get(context.Background(), c.OS.Network, parent).Extract()
		if err != nil {
			return false, err
		}
		var have []string
		for _, a := range p.AllowedAddressPairs {
			have = append(have, a.IPAddress)
		}
		for _, ip := range want {
			if !slices.Contains(have, ip) {
				return false, fmt.Errorf("pairs %v lack %s", have, ip)
			}
		}
		for _, ip := range gone {
			if slices.Contains(have, ip) {
				return false, fmt.Errorf("pairs %v still hold %s", have, ip)
			}
		}
		return true, nil
	})
}

func ips(pods []*corev1.Pod) []string {
	var out []string
	for _, p := range pods {
		out = append(out, p.Status.PodIP)
	}
	return out
}

// eachReachesEachOther: every pod's GET of every other pod's :8080 is
// answered by that pod.
func eachReachesEachOther(t *testing.T, pods []*corev1.Pod) {
	t.Helper()
	for _, from := range pods {
		for _, to := range pods {
			if from.Name != to.Name {
				eventuallyGets(t, from, to.Status.PodIP, to.Name)
			}
		}
	}
}

// eventuallyGets waits until from's GET of ip:8080 is answered by want.
func eventuallyGets(t *testing.T, from *corev1.Pod, ip, want string) {
	t.Helper()
	framework.Eventually(t, time.Minute, time.Second, from.Name+" reaches "+want, func() (bool, error) {
		out, _ := framework.Exec(t, from, "sh", "-c", get(ip, 8080))
		return strings.TrimSpace(out) == want, fmt.Errorf("answered %q", out)
	})
}

// get is a shell command sending GET / to ip:port, printing the answer's
// last line (the test image's server answers with the pod's name).
func get(ip string, port int) string { return getWith("nc", ip, port) }

// getWith is get with another nc (e.g. "busybox nc" where nc is not one).
func getWith(nc, ip string, port int) string {
	return fmt.Sprintf(`printf 'GET / HTTP/1.0\r\n\r\n' | %s -w 2 %s %d | tail -n 1`, nc, ip, port)
}
