//go:build e2e

// Package vms tests the design documents' first promise: OpenStack VMs and
// Kubernetes pods are one network. A VM is made as Nova makes one (a port
// on a tenant network of the cloud, on the cluster's router, with a
// security group of its own, bound to a node and plugged into its br-int),
// and reaches pods, Services (ClusterIP, floating IP, node ports) and is
// reached by pods; NetworkPolicies decide about VMs by their addresses.
package vms

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	kuryrv1 "github.com/kuryr-k8s/kuryr/api/v1"
	"github.com/kuryr-k8s/kuryr/test/e2e/framework"
)

// TestVMsAndPods: VMs on both nodes reach pods on both nodes, a ClusterIP
// over TCP and UDP, a LoadBalancer's floating IP and every node's node
// port; pods reach the VMs; an ipBlock that holds the VMs' subnet admits
// them, one that does not, does not.
func TestVMsAndPods(t *testing.T) {
	c, k, ns := framework.Setup(t, "e2e-vms")
	var pods []*corev1.Pod
	for i, node := range c.PodNodes {
		pods = append(pods, createServer(t, c, ns, fmt.Sprintf("web-%d", i), node))
	}
	pods = c.WaitReady(t, pods, 3*time.Minute)
	var vms []*framework.VM
	for i, node := range c.Nodes {
		vm := c.CreateVM(t, node, fmt.Sprintf("%d", i))
		framework.ServeTCP(t, vm.Netns, 7000, "vm-"+vm.Name)
		vms = append(vms, vm)
	}

	t.Run("vm-to-pod", func(t *testing.T) {
		for _, vm := range vms {
			for _, p := range pods {
				eventuallyAnswers(t, vm, p.Status.PodIP+":8080", p.Name)
			}
		}
	})
	t.Run("pod-to-vm", func(t *testing.T) {
		for _, p := range pods {
			for _, vm := range vms {
				framework.Eventually(t, time.Minute, time.Second, p.Name+" reaches vm-"+vm.Name, func() (bool, error) {
					out, _ := framework.Exec(t, p, "sh", "-c", fmt.Sprintf("nc -w 2 %s 7000 </dev/null", vm.IP))
					return strings.Contains(out, "vm-"+vm.Name), fmt.Errorf("got %q", out)
				})
			}
		}
	})

	svc := createService(t, c, ns, "web", corev1.ServiceTypeLoadBalancer)
	klb := waitKLB(t, k, ns, "web", 2*len(pods))
	t.Run("vm-to-clusterip", func(t *testing.T) {
		for _, vm := range vms {
			reachesAll(t, vm, func() string { return askHTTP(vm, svc.Spec.ClusterIP+":80") }, names(pods))
			reachesAll(t, vm, func() string { return askUDP(vm, svc.Spec.ClusterIP+":9090") }, names(pods))
		}
	})
	t.Run("vm-to-floating-ip", func(t *testing.T) {
		if klb.Status.FloatingIP == nil {
			t.Fatalf("no floating IP on %s/web: %+v", ns, klb.Status)
		}
		for _, vm := range vms {
			reachesAll(t, vm, func() string { return askHTTP(vm, klb.Status.FloatingIP.IP+":80") }, names(pods))
		}
	})
	t.Run("vm-to-node-ports", func(t *testing.T) {
		port := svc.Spec.Ports[0].NodePort
		for _, node := range c.Nodes {
			addr := fmt.Sprintf("%s:%d", managementAddress(t, c, node), port)
			for _, vm := range vms {
				reachesAll(t, vm, func() string { return askHTTP(vm, addr) }, names(pods))
			}
		}
	})
	t.Run("policy-ip-block", func(t *testing.T) {
		// On a hypervisor's pod: nested-macvlan pods (KURYR_E2E_POD_NODES=vms)
		// share their VM's port and security groups, no policy applies to them
		// (a Warning says so; docs/nested.md).
		target := onHypervisor(t, c, pods)
		vmSubnet := subnetOf(t, vms[0])
		np := ingressFrom(ns, "vms-in", vmSubnet)
		apply(t, c, np)
		for _, vm := range vms {
			eventuallyAnswers(t, vm, target.Status.PodIP+":8080", target.Name)
		}
		np.Spec.Ingress[0].From[0].IPBlock.CIDR = "10.10.0.0/16" // the pods, not the VMs
		apply(t, c, np)
		for _, vm := range vms {
			framework.Eventually(t, time.Minute, time.Second, "vm-"+vm.Name+" shut out", func() (bool, error) {
				for range 3 {
					if out := askHTTP(vm, target.Status.PodIP+":8080"); out != "" {
						return false, fmt.Errorf("answered %q", out)
					}
				}
				return true, nil
			})
		}
	})
}

// onHypervisor is the first of pods on a hypervisor node.
func onHypervisor(t *testing.T, c *framework.Cloud, pods []*corev1.Pod) *corev1.Pod {
	t.Helper()
	for _, p := range pods {
		if slices.Contains(c.Nodes, p.Spec.NodeName) {
			return p
		}
	}
	t.Fatalf("no pod on a hypervisor node (%v)", c.Nodes)
	return nil
}

func createServer(t *testing.T, c *framework.Cloud, ns, name, node string) *corev1.Pod {
	t.Helper()
	p := c.TestPod(ns, name, node)
	p.Labels = map[string]string{"app": "web"}
	ct := &p.Spec.Containers[0]
	ct.Command = []string{"sh", "-c", "testapp udp-serve 9090 & exec /bin/serve"}
	ct.Ports = []corev1.ContainerPort{{Name: "web", ContainerPort: 8080}, {Name: "echo", ContainerPort: 9090, Protocol: corev1.ProtocolUDP}}
	created, err := c.Kube.CoreV1().Pods(ns).Create(context.Background(), p, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return created
}

func createService(t *testing.T, c *framework.Cloud, ns, name string, typ corev1.ServiceType) *corev1.Service {
	t.Helper()
	s := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: corev1.ServiceSpec{
		Type: typ, Selector: map[string]string{"app": "web"}, Ports: []corev1.ServicePort{
			{Name: "http", Port: 80, TargetPort: intstr.FromString("web")},
			{Name: "echo", Port: 9090, Protocol: corev1.ProtocolUDP, TargetPort: intstr.FromString("echo")}}}}
	created, err := c.Kube.CoreV1().Services(ns).Create(context.Background(), s, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return created
}

func waitKLB(t *testing.T, k *framework.Kuryr, ns, name string, members int) *kuryrv1.KuryrLoadBalancer {
	t.Helper()
	var klb kuryrv1.KuryrLoadBalancer
	framework.Eventually(t, 2*time.Minute, 500*time.Millisecond, "KuryrLoadBalancer "+name+" Ready", func() (bool, error) {
		if err := k.Get(context.Background(), kuryrKey(ns, name), &klb); err != nil {
			return false, err
		}
		ready := false
		for _, cond := range klb.Status.Conditions {
			ready = ready || (cond.Type == kuryrv1.ConditionReady && cond.Status == metav1.ConditionTrue)
		}
		return ready && klb.Status.Members == members && klb.Status.FloatingIP != nil,
			fmt.Errorf("ready %v, %d members, floating IP %+v", ready, klb.Status.Members, klb.Status.FloatingIP)
	})
	return &klb
}

// managementAddress is a node's address the cloud's networks reach: its
// management port's.
func managementAddress(t *testing.T, c *framework.Cloud, node string) string {
	t.Helper()
	n, err := c.Kube.CoreV1().Nodes().Get(context.Background(), node, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var np kuryrv1.NodePort
	if err := json.Unmarshal([]byte(n.Annotations[kuryrv1.NodePortAnnotation]), &np); err != nil || len(np.IPs) == 0 {
		t.Fatalf("node %s has no management port: %q", node, n.Annotations[kuryrv1.NodePortAnnotation])
	}
	return strings.Split(np.IPs[0], "/")[0]
}

func ingressFrom(ns, name, cidr string) *networkingv1.NetworkPolicy {
	return &networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: networkingv1.NetworkPolicySpec{
		PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
		PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress},
		Ingress: []networkingv1.NetworkPolicyIngressRule{{From: []networkingv1.NetworkPolicyPeer{{
			IPBlock: &networkingv1.IPBlock{CIDR: cidr}}}}}}}
}

func apply(t *testing.T, c *framework.Cloud, np *networkingv1.NetworkPolicy) {
	t.Helper()
	api := c.Kube.NetworkingV1().NetworkPolicies(np.Namespace)
	cur, err := api.Get(context.Background(), np.Name, metav1.GetOptions{})
	if err != nil {
		if _, err := api.Create(context.Background(), np, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		return
	}
	cur.Spec = np.Spec
	if _, err := api.Update(context.Background(), cur, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func names(pods []*corev1.Pod) []string {
	var out []string
	for _, p := range pods {
		out = append(out, p.Name)
	}
	sort.Strings(out)
	return out
}
