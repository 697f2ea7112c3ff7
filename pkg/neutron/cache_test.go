package neutron_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/kuryr-k8s/kuryr/pkg/neutron"
	"github.com/kuryr-k8s/kuryr/pkg/neutron/neutrontest"
)

// ForgetNetwork drops the network and its subnets from memory: a subnet
// added, or tagged, since they were read is seen at the next read; the
// subnets of other networks stay in memory.
func TestForgetNetworkForgetsItsSubnets(t *testing.T) {
	fake := neutrontest.New(t)
	info := neutron.NewInfo(neutron.New(fake.Client(t)), time.Hour)
	ctx := context.Background()
	net := fake.Add("networks", neutrontest.Object{"name": "ext"})
	other := fake.Add("networks", neutrontest.Object{"name": "other"})
	sub := fake.Add("subnets", neutrontest.Object{"network_id": net, "cidr": "198.18.0.0/24", "name": "a"})
	osub := fake.Add("subnets", neutrontest.Object{"network_id": other, "cidr": "198.19.0.0/24", "name": "o"})
	fake.Set("networks", net, "subnets", []string{sub}) // Add, unlike a POST, lists no subnet on its network
	for _, id := range []string{sub, osub} {
		if _, err := info.Subnet(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	if n, err := info.Network(ctx, net); err != nil || len(n.Subnets) != 1 {
		t.Fatalf("network %+v, %v", n, err)
	}
	added := fake.Add("subnets", neutrontest.Object{"network_id": net, "cidr": "198.18.1.0/24", "name": "b"})
	fake.Set("networks", net, "subnets", []string{sub, added})
	fake.Set("subnets", sub, "tags", []string{"blue"})
	fake.Set("subnets", osub, "name", "renamed")
	info.ForgetNetwork(net)
	n, err := info.Network(ctx, net)
	if err != nil || !slices.Contains(n.Subnets, added) {
		t.Fatalf("network %+v, %v: want subnet %s added since", n, err, added)
	}
	if s, err := info.Subnet(ctx, sub); err != nil || !slices.Contains(s.Tags, "blue") {
		t.Fatalf("subnet %+v, %v: want its tag added since", s, err)
	}
	if s, err := info.Subnet(ctx, osub); err != nil || s.Name != "o" {
		t.Fatalf("another network's subnet %+v, %v: want it from memory", s, err)
	}
}
