package neutron_test

import (
	"context"
	"testing"

	"github.com/kuryr-k8s/kuryr/pkg/names"
	"github.com/kuryr-k8s/kuryr/pkg/neutron"
	"github.com/kuryr-k8s/kuryr/pkg/neutron/neutrontest"
)

// A network is deleted only once no port but Neutron's own is on it: its
// users are listed first, and Neutron refuses (409) while any remains,
// the router interface included.
func TestNetworkUsersAndDelete(t *testing.T) {
	fake := neutrontest.New(t)
	c := neutron.New(fake.Client(t))
	ctx := context.Background()
	net := fake.Add("networks", neutrontest.Object{"name": "kuryr-c-node-n1"})
	sub := fake.Add("subnets", neutrontest.Object{"network_id": net, "cidr": "10.11.1.0/24"})
	pod := fake.Add("ports", neutrontest.Object{"network_id": net, "device_owner": "compute:kuryr"})
	fake.Add("ports", neutrontest.Object{"network_id": net, "device_owner": "network:dhcp"})
	fake.Add("ports", neutrontest.Object{"network_id": "another", "device_owner": "compute:kuryr"})
	if err := c.EnsureRouterInterface(ctx, "r1", sub); err != nil {
		t.Fatal(err)
	}
	users, err := c.NetworkUsers(ctx, net)
	if err != nil || len(users) != 1 || users[0].ID != pod {
		t.Fatalf("users %v, %v; want only the pod's port %s", users, err, pod)
	}
	steps := []struct {
		name   string
		before func() error
		inUse  bool
	}{
		{"a pod port remains", func() error { return nil }, true},
		{"the router interface remains", func() error { return c.DeletePort(ctx, pod) }, true},
		{"detached", func() error { return c.RemoveRouterInterface(ctx, "r1", sub) }, false},
	}
	for _, s := range steps {
		if err := s.before(); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		err := c.DeleteNetwork(ctx, net)
		if got := neutron.InUse(err); got != s.inUse || (!s.inUse && err != nil) {
			t.Fatalf("%s: delete network: %v, want in use %v", s.name, err, s.inUse)
		}
	}
	if fake.Count("networks") != 0 || fake.Count("subnets") != 0 || fake.Count("ports") != 1 {
		t.Errorf("left: %d networks, %d subnets, %d ports (want only the other network's port)",
			fake.Count("networks"), fake.Count("subnets"), fake.Count("ports"))
	}
}

// A node's network tag and its management port's tag are told apart.
func TestNodeTagsDoNotMix(t *testing.T) {
	tests := []struct {
		tags            []string
		node, network   string
		namespace, pool string
	}{
		{tags: []string{names.NodeTag("n1")}, node: "n1"},
		{tags: []string{names.NodeNetworkTag("n1")}, network: "n1"},
		{tags: []string{names.ClusterTag("c"), names.NodeNetworkTag("node-x")}, network: "node-x"},
		{tags: []string{names.NamespaceTag("n1")}, namespace: "n1"},
		{tags: []string{names.PoolTag("n1")}, pool: "n1"},
	}
	for _, tt := range tests {
		if names.NodeOf(tt.tags) != tt.node || names.NodeNetworkOf(tt.tags) != tt.network ||
			names.NamespaceOf(tt.tags) != tt.namespace || names.PoolNodeOf(tt.tags) != tt.pool {
			t.Errorf("%v: node %q, node network %q, namespace %q, pool %q", tt.tags, names.NodeOf(tt.tags),
				names.NodeNetworkOf(tt.tags), names.NamespaceOf(tt.tags), names.PoolNodeOf(tt.tags))
		}
	}
}
