//go:build e2e && destructive

// Package uninstall removes kuryr from the local cloud as an operator
// does (kubectl kuryr uninstall, then helm uninstall) and installs it
// again. Destructive for whatever else runs on the cloud, so it has its
// own build tag: hack/e2e.sh runs it last, after every other suite.
package uninstall

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/loadbalancers"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/floatingips"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/security/groups"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/networks"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/subnets"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kuryrv1 "github.com/kuryr-k8s/kuryr/api/v1"
	"github.com/kuryr-k8s/kuryr/pkg/names"
	"github.com/kuryr-k8s/kuryr/pkg/neutron"
	"github.com/kuryr-k8s/kuryr/test/e2e/framework"
)

// TestUninstall: with pods, a LoadBalancer Service (a floating IP) and a
// NetworkPolicy in place, `kubectl kuryr uninstall --yes` leaves no
// OpenStack object tagged with the cluster, no kuryr object and no
// finalizer, and the cloud's own objects (the pod network, its subnet,
// the router, the pods' security group) untouched; helm uninstall then
// removes the rest. kuryr is installed again afterwards.
func TestUninstall(t *testing.T) {
	c, k, ns := framework.Setup(t, "uninstall")
	t.Cleanup(func() { reinstall(t, k) })
	pods := c.CreatePods(t, ns, "web", 2)
	c.WaitReady(t, pods, 3*time.Minute)
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Selector: pods[0].Labels,
			Ports: []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080)}}}}
	if _, err := c.Kube.CoreV1().Services(ns).Create(context.Background(), svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	np := &networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"},
		Spec: networkingv1.NetworkPolicySpec{PodSelector: metav1.LabelSelector{MatchLabels: pods[0].Labels},
			Ingress: []networkingv1.NetworkPolicyIngressRule{{From: []networkingv1.NetworkPolicyPeer{{
				PodSelector: &metav1.LabelSelector{MatchLabels: pods[0].Labels}}}}}}}
	if _, err := c.Kube.NetworkingV1().NetworkPolicies(ns).Create(context.Background(), np, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	k.WaitPolicyReady(t, ns, "web", 2*time.Minute)
	framework.Eventually(t, 5*time.Minute, time.Second, "the Service's floating IP", func() (bool, error) {
		s, err := c.Kube.CoreV1().Services(ns).Get(context.Background(), "web", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return len(s.Status.LoadBalancer.Ingress) > 0, fmt.Errorf("no ingress yet")
	})
	before := tagged(t, c, k.Cluster)
	t.Logf("before: %s", before)
	if before.total() == 0 || before["floating IPs"] == 0 || before["load balancers"] == 0 || before["security groups"] == 0 {
		t.Fatalf("the workload made too little to check: %s", before)
	}

	plugin := framework.Plugin(t)
	start := time.Now()
	out, err := exec.Command(plugin, "uninstall", "--yes").CombinedOutput()
	t.Logf("kubectl kuryr uninstall --yes (%s):\n%s", time.Since(start).Round(time.Second), out)
	if err != nil {
		t.Fatalf("uninstall: %v", err)
	}
	if after := tagged(t, c, k.Cluster); after.total() != 0 {
		t.Errorf("left tagged for the cluster: %s", after)
	}
	if n := kuryrObjects(t, k); n != 0 {
		t.Errorf("%d kuryr objects left", n)
	}
	untouched(t, c)
	helm(t, "uninstall", "kuryr", "--namespace", "kube-system", "--wait", "--timeout", "3m")
	if n := kuryrObjects(t, k); n != 0 {
		t.Errorf("%d kuryr objects left after helm uninstall", n)
	}
}

type counts map[string]int

func (c counts) total() (n int) {
	for _, v := range c {
		n += v
	}
	return n
}

func (c counts) String() string {
	var parts []string
	for _, k := range []string{"ports", "networks", "subnets", "security groups", "floating IPs", "load balancers", "address groups"} {
		parts = append(parts, fmt.Sprintf("%d %s", c[k], k))
	}
	return strings.Join(parts, ", ")
}

// tagged counts the OpenStack objects tagged for the cluster, listed
// directly with the cloud's admin credentials (and the address groups,
// which take no tags, by the description kuryr gives them).
func tagged(t *testing.T, c *framework.Cloud, cluster string) counts {
	t.Helper()
	ctx := context.Background()
	tag := names.ClusterTag(cluster)
	out := counts{}
	count := func(what string, n int, err error) {
		if err != nil {
			t.Fatalf("list %s: %v", what, err)
		}
		out[what] = n
	}
	p, err := ports.List(c.OS.Network, ports.ListOpts{Tags: tag}).AllPages(ctx)
	ps, _ := ports.ExtractPorts(p)
	count("ports", len(ps), err)
	p, err = networks.List(c.OS.Network, networks.ListOpts{Tags: tag}).AllPages(ctx)
	nets, _ := networks.ExtractNetworks(p)
	count("networks", len(nets), err)
	p, err = subnets.List(c.OS.Network, subnets.ListOpts{Tags: tag}).AllPages(ctx)
	subs, _ := subnets.ExtractSubnets(p)
	count("subnets", len(subs), err)
	p, err = groups.List(c.OS.Network, groups.ListOpts{Tags: tag}).AllPages(ctx)
	sgs, _ := groups.ExtractGroups(p)
	count("security groups", len(sgs), err)
	p, err = floatingips.List(c.OS.Network, floatingips.ListOpts{Tags: tag}).AllPages(ctx)
	fips, _ := floatingips.ExtractFloatingIPs(p)
	count("floating IPs", len(fips), err)
	p, err = loadbalancers.List(c.OS.LoadBalancer, loadbalancers.ListOpts{Tags: []string{tag}}).AllPages(ctx)
	lbs, _ := loadbalancers.ExtractLoadBalancers(p)
	count("load balancers", len(lbs), err)
	ags, err := neutron.New(c.OS.Network).ListAddressGroups(ctx, "")
	n := 0
	for _, ag := range ags {
		if ag.Description == names.PeerAddressGroupDescription(cluster) || ag.Description == names.AddressGroupProbeDescription(cluster) {
			n++
		}
	}
	count("address groups", n, err)
	return out
}

func kuryrObjects(t *testing.T, k *framework.Kuryr) int {
	t.Helper()
	ctx := context.Background()
	var kps kuryrv1.KuryrPortList
	var kns kuryrv1.KuryrNetworkList
	var klbs kuryrv1.KuryrLoadBalancerList
	var knps kuryrv1.KuryrNetworkPolicyList
	for _, l := range []client.ObjectList{&kps, &kns, &klbs, &knps} {
		if err := k.Client.List(ctx, l); err != nil {
			t.Fatal(err)
		}
	}
	return len(kps.Items) + len(kns.Items) + len(klbs.Items) + len(knps.Items)
}

// untouched: the cloud's own objects that kuryr.conf names are still there.
func untouched(t *testing.T, c *framework.Cloud) {
	t.Helper()
	ctx := context.Background()
	n := neutron.New(c.OS.Network)
	if _, err := n.GetSubnet(ctx, c.PodSubnet); err != nil {
		t.Errorf("the pod subnet: %v", err)
	}
	if _, err := n.GetSecurityGroup(ctx, c.PodSG); err != nil {
		t.Errorf("the pods' security group: %v", err)
	}
	if _, err := n.GetNetwork(ctx, c.PodNet); err != nil {
		t.Errorf("the pod network: %v", err)
	}
	if _, err := n.GetSubnet(ctx, c.ServiceSubnet); err != nil {
		t.Errorf("the service subnet: %v", err)
	}
}

func helm(t *testing.T, args ...string) {
	t.Helper()
	root, err := exec.Command("git", "rev-parse", "--show-toplevel").Output()
	if err != nil {
		t.Fatalf("repository root: %v", err)
	}
	path, err := exec.Command("bash", strings.TrimSpace(string(root))+"/hack/helm.sh").Output()
	if err != nil {
		t.Fatalf("hack/helm.sh: %v", err)
	}
	if out, err := exec.Command(strings.TrimSpace(string(path)), args...).CombinedOutput(); err != nil {
		t.Fatalf("helm %v: %v: %s", args, err, out)
	}
}

// reinstall puts kuryr back as make up left it (the pods that lost their
// ports, CoreDNS's, restarted).
func reinstall(t *testing.T, k *framework.Kuryr) {
	t.Helper()
	start := time.Now()
	k.Ctl(t, "install")
	t.Logf("kuryr installed again in %s", time.Since(start).Round(time.Second))
}
