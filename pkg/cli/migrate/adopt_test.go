package migrate

import (
	"context"
	"slices"
	"testing"

	"github.com/kuryr-k8s/kuryr/pkg/names"
	"github.com/kuryr-k8s/kuryr/pkg/neutron"
	"github.com/kuryr-k8s/kuryr/pkg/neutron/neutrontest"
)

// The original's port and namespace network, untagged and named as it
// names them, are tagged (and renamed) as kuryr's; a second run writes
// nothing; what is gone is reported, not an error.
func TestAdoptNeutron(t *testing.T) {
	fake := neutrontest.New(t)
	ctx := context.Background()
	net := fake.Add("networks", neutrontest.Object{"name": "ns-uid/team-a", "tags": []string{"k8s"}})
	sub := fake.Add("subnets", neutrontest.Object{"name": "ns-uid/team-a", "network_id": net, "cidr": "10.1.0.0/24"})
	port := fake.Add("ports", neutrontest.Object{"name": "", "network_id": net, "device_owner": "compute:kuryr"})
	a := &adopter{neutron: neutron.New(fake.Client(t)), cluster: "c1", extra: []string{"extra"}}

	if ok, err := a.port(ctx, PortRecord{Ref: Ref{"team-a", "web", "pod-uid"}, PortID: port}); !ok || err != nil {
		t.Fatalf("port: %v, %v", ok, err)
	}
	if ok, err := a.network(ctx, NetworkRecord{Namespace: "team-a", NetworkID: net, SubnetID: sub}); !ok || err != nil {
		t.Fatalf("network: %v, %v", ok, err)
	}
	want := map[string][]string{
		"ports":    {"kuryr-cluster=c1", names.PodTag("pod-uid"), "extra", names.AdoptedTag},
		"networks": {"k8s", "kuryr-cluster=c1", names.NamespaceTag("team-a"), "extra"},
		"subnets":  {"kuryr-cluster=c1", names.NamespaceTag("team-a"), "extra"},
	}
	for coll, id := range map[string]string{"ports": port, "networks": net, "subnets": sub} {
		got, _ := fake.Get(coll, id)["tags"].([]string)
		if !slices.Equal(got, want[coll]) {
			t.Errorf("%s tags %v, want %v", coll, got, want[coll])
		}
	}
	for coll, id := range map[string]string{"networks": net, "subnets": sub} {
		if got := fake.Get(coll, id)["name"]; got != names.NetworkName("c1", "team-a") {
			t.Errorf("%s named %v", coll, got)
		}
	}

	writes := fake.Writes()
	if _, err := a.port(ctx, PortRecord{Ref: Ref{"team-a", "web", "pod-uid"}, PortID: port}); err != nil {
		t.Fatal(err)
	}
	if fake.Writes() != writes {
		t.Errorf("a second adoption of the port wrote %d times", fake.Writes()-writes)
	}
	if ok, err := a.port(ctx, PortRecord{PortID: "gone"}); ok || err != nil {
		t.Errorf("a port gone: %v, %v (want false, nil)", ok, err)
	}
	if ok, err := a.network(ctx, NetworkRecord{Namespace: "x", NetworkID: "gone", SubnetID: "gone"}); ok || err != nil {
		t.Errorf("a network gone: %v, %v (want false, nil)", ok, err)
	}
}
