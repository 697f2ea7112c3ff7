//go:build e2e

// Package localcloud proves that every part of the local cloud is real: the
// Kubernetes nodes, Neutron's OVN agents, the OVN dataplane across the Geneve
// underlay, Octavia's OVN load balancers and floating IPs.
package localcloud

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/listeners"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/loadbalancers"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/pools"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/floatingips"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kuryr-k8s/kuryr/pkg/neutron"
	"github.com/kuryr-k8s/kuryr/test/e2e/framework"
)

func TestNodesReady(t *testing.T) {
	c := framework.Connect(t)
	nodes, err := c.Kube.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ready := map[string]bool{}
	for _, n := range nodes.Items {
		for _, cond := range n.Status.Conditions {
			if cond.Type == corev1.NodeReady && cond.Status == corev1.ConditionTrue {
				ready[n.Name] = true
			}
		}
	}
	for _, n := range c.Nodes {
		if !ready[n] {
			t.Errorf("node %s is not Ready", n)
		}
	}
}

func TestOneAliveOVNAgentPerNode(t *testing.T) {
	c := framework.Connect(t)
	// gophercloud's agents package cannot parse the timestamps OVN agents
	// report ("2006-01-02 15:04:05.000000+00:00"), even to page through
	// them; read only what is needed.
	var body struct {
		Agents []struct {
			Host      string `json:"host"`
			AgentType string `json:"agent_type"`
			Alive     bool   `json:"alive"`
		} `json:"agents"`
	}
	net := c.OS.Network
	if _, err := net.Get(context.Background(), net.ServiceURL("agents"), &body, nil); err != nil {
		t.Fatal(err)
	}
	all := body.Agents
	alive := map[string]int{}
	for _, a := range all {
		if strings.HasPrefix(a.AgentType, "OVN Controller") && a.Alive {
			alive[a.Host]++
		}
	}
	for _, n := range c.Nodes {
		if alive[n] != 1 {
			t.Errorf("node %s: %d alive OVN controller agents, want 1", n, alive[n])
		}
	}
}

// TestPortsAcrossNodes binds a port to each of two nodes, plugs both, and
// checks they go ACTIVE and reach each other across the Geneve underlay.
func TestPortsAcrossNodes(t *testing.T) {
	c := framework.Connect(t)
	if len(c.Nodes) < 2 {
		t.Fatalf("need two nodes, have %v", c.Nodes)
	}
	a, b := plugOn(t, c, c.Nodes[0], "a"), plugOn(t, c, c.Nodes[1], "b")
	if err := framework.Ping(a.Netns, b.IP, 3); err != nil {
		t.Fatalf("%s -> %s across nodes: %v", a.IP, b.IP, err)
	}
	framework.ServeTCP(t, b.Netns, 8080, "hello from b")
	got, err := framework.DialTCP(a.Netns, b.IP+":8080")
	if err != nil || got != "hello from b" {
		t.Fatalf("TCP %s -> %s:8080: got %q, %v", a.IP, b.IP, got, err)
	}
}

func plugOn(t *testing.T, c *framework.Cloud, node, tag string) *framework.BoundPort {
	t.Helper()
	name := framework.Name("smoke-" + tag)
	p := c.CreateBoundPort(t, node, name)
	bp := c.PlugPort(t, node, p, name)
	took := c.WaitPortActive(t, p.ID)
	t.Logf("port %s on %s (%s) ACTIVE %s after plugging", p.ID, node, bp.IP, took.Round(time.Millisecond))
	return bp
}

// TestOVNLoadBalancer creates an Octavia load balancer with the ovn provider
// on the service subnet, with a backend on one node and a client on another.
func TestOVNLoadBalancer(t *testing.T) {
	c := framework.Connect(t)
	client, backend := plugOn(t, c, c.Nodes[0], "lbc"), plugOn(t, c, c.Nodes[len(c.Nodes)-1], "lbb")
	framework.ServeTCP(t, backend.Netns, 8080, "hello from backend")

	ctx := context.Background()
	lb, err := loadbalancers.Create(ctx, c.OS.LoadBalancer, loadbalancers.CreateOpts{
		Name: framework.Name("smoke-lb"), VipSubnetID: c.ServiceSubnet, Provider: "ovn", ProjectID: c.ProjectID,
	}).Extract()
	if err != nil {
		t.Fatalf("create load balancer: %v", err)
	}
	t.Cleanup(func() {
		if err := loadbalancers.Delete(context.Background(), c.OS.LoadBalancer, lb.ID,
			loadbalancers.DeleteOpts{Cascade: true}).ExtractErr(); err != nil {
			t.Errorf("delete load balancer %s: %v", lb.ID, err)
		}
	})
	waitLBActive(t, c, lb.ID)
	l, err := listeners.Create(ctx, c.OS.LoadBalancer, listeners.CreateOpts{
		LoadbalancerID: lb.ID, Protocol: listeners.ProtocolTCP, ProtocolPort: 80, ProjectID: c.ProjectID,
	}).Extract()
	if err != nil {
		t.Fatalf("create listener: %v", err)
	}
	waitLBActive(t, c, lb.ID)
	p, err := pools.Create(ctx, c.OS.LoadBalancer, pools.CreateOpts{
		ListenerID: l.ID, Protocol: pools.ProtocolTCP, LBMethod: pools.LBMethodSourceIpPort, ProjectID: c.ProjectID,
	}).Extract()
	if err != nil {
		t.Fatalf("create pool: %v", err)
	}
	waitLBActive(t, c, lb.ID)
	if _, err := pools.CreateMember(ctx, c.OS.LoadBalancer, p.ID, pools.CreateMemberOpts{
		Address: backend.IP, ProtocolPort: 8080, SubnetID: c.PodSubnet, ProjectID: c.ProjectID,
	}).Extract(); err != nil {
		t.Fatalf("create member: %v", err)
	}
	waitLBActive(t, c, lb.ID)

	var got string
	framework.Eventually(t, 10*time.Second, 200*time.Millisecond, "TCP through the load balancer", func() (bool, error) {
		got, err = framework.DialTCP(client.Netns, lb.VipAddress+":80")
		return err == nil, err
	})
	if got != "hello from backend" {
		t.Fatalf("through %s:80 got %q", lb.VipAddress, got)
	}
}

func waitLBActive(t *testing.T, c *framework.Cloud, id string) {
	t.Helper()
	framework.Eventually(t, 60*time.Second, 100*time.Millisecond, "load balancer "+id+" ACTIVE", func() (bool, error) {
		lb, err := loadbalancers.Get(context.Background(), c.OS.LoadBalancer, id).Extract()
		if err != nil {
			return false, err
		}
		if lb.ProvisioningStatus == "ERROR" {
			t.Fatalf("load balancer %s went to ERROR", id)
		}
		return lb.ProvisioningStatus == "ACTIVE", fmt.Errorf("provisioning status %s", lb.ProvisioningStatus)
	})
}

// TestFloatingIPFromOutside associates a floating IP with a plugged port and
// reaches it from the namespace behind the provider bridge.
func TestFloatingIPFromOutside(t *testing.T) {
	c := framework.Connect(t)
	bp := plugOn(t, c, c.Nodes[len(c.Nodes)-1], "fip")
	framework.ServeTCP(t, bp.Netns, 8080, "hello from behind a floating IP")
	fip, err := floatingips.Create(context.Background(), c.OS.Network, floatingips.CreateOpts{
		FloatingNetworkID: c.PublicNet, PortID: bp.Port.ID, ProjectID: c.ProjectID,
	}).Extract()
	if err != nil {
		t.Fatalf("create floating IP: %v", err)
	}
	t.Cleanup(func() {
		if err := floatingips.Delete(context.Background(), c.OS.Network, fip.ID).ExtractErr(); err != nil {
			t.Errorf("delete floating IP %s: %v", fip.ID, err)
		}
	})
	outside := framework.OpenNetns(t, c.OutsideNetns)
	framework.Eventually(t, 20*time.Second, 300*time.Millisecond, "ping "+fip.FloatingIP+" from outside", func() (bool, error) {
		err := framework.Ping(outside, fip.FloatingIP, 1)
		return err == nil, err
	})
	got, err := framework.DialTCP(outside, fip.FloatingIP+":8080")
	if err != nil || got != "hello from behind a floating IP" {
		t.Fatalf("TCP to %s:8080 from outside: got %q, %v", fip.FloatingIP, got, err)
	}
}

// TestPortRevisions checks what kuryr's security group writes rely on
// (docs/architecture.md, "Late writes"): a port update made at a revision
// the port has left is refused (412) and changes nothing; an update that
// changes nothing leaves the revision as it is; a fence (the description,
// set at a revision) moves the port past it.
func TestPortRevisions(t *testing.T) {
	c := framework.Connect(t)
	ctx := context.Background()
	nc := neutron.New(c.OS.Network)
	p := c.CreateBoundPort(t, c.Nodes[0], framework.Name("smoke-revisions"))
	groups, rev, err := nc.PortSecurityGroups(ctx, p.ID)
	if err != nil {
		t.Fatal(err)
	}
	if err := nc.SetPortSecurityGroups(ctx, p.ID, groups, rev); err != nil {
		t.Fatalf("the same groups at revision %d: %v", rev, err)
	}
	if _, again, _ := nc.PortSecurityGroups(ctx, p.ID); again != rev {
		t.Errorf("an update that changes nothing moved the port from revision %d to %d", rev, again)
	}
	if err := nc.FencePort(ctx, p.ID, rev); err != nil {
		t.Fatalf("fence at revision %d: %v", rev, err)
	}
	err = nc.SetPortSecurityGroups(ctx, p.ID, groups[:1], rev)
	if !neutron.PreconditionFailed(err) {
		t.Errorf("a write at the fenced revision %d: %v, want 412", rev, err)
	}
	if now, at, _ := nc.PortSecurityGroups(ctx, p.ID); len(now) != len(groups) || at <= rev {
		t.Errorf("after the refused write: groups %v at revision %d, want %v past %d", now, at, groups, rev)
	}
}
