package cleanup

import (
	"testing"

	"github.com/kuryr-k8s/kuryr/pkg/neutron"
)

func port(id string, tags ...string) neutron.Port {
	var p neutron.Port
	p.ID, p.Tags = id, tags
	return p
}

func network(id string, tags ...string) neutron.Network {
	var n neutron.Network
	n.ID, n.Tags = id, tags
	return n
}

func TestOrphans(t *testing.T) {
	owners := Owners{
		PodUIDs:    map[string]bool{"live": true},
		PortIDs:    map[string]bool{"p-referenced": true, "p-live": true},
		PortOfPod:  map[string]string{"live": "p-live", "gone-but-kuryrport-remains": "p-referenced"},
		Namespaces: map[string]bool{"shop": true},
	}
	ports := []neutron.Port{
		port("p-live", neutron.PodTag("live")),
		port("p-dead", neutron.PodTag("dead")),
		port("p-live-duplicate", neutron.PodTag("live")),   // created in flight during a crash
		port("p-pending", neutron.PodTag("being-created")), // pod alive in PodUIDs below, no record yet
		port("p-referenced", neutron.PodTag("gone-but-kuryrport-remains")),
		port("p-untagged"), // not a pod port: never touched
	}
	owners.PodUIDs["being-created"] = true
	got := OrphanPorts(ports, owners)
	if len(got) != 2 || got[0].ID != "p-dead" || got[1].ID != "p-live-duplicate" {
		t.Errorf("orphan ports = %v, want [p-dead p-live-duplicate]", got)
	}
	nets := []neutron.Network{
		network("n-shop", neutron.NamespaceTag("shop")),
		network("n-old", neutron.NamespaceTag("old")),
		network("n-shared"), // the default pod network: never touched
	}
	gotN := OrphanNetworks(nets, owners)
	if len(gotN) != 1 || gotN[0].ID != "n-old" {
		t.Errorf("orphan networks = %v, want [n-old]", gotN)
	}
}
