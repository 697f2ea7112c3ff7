package cleanup

import (
	"reflect"
	"testing"
	"time"

	"github.com/kuryr-k8s/kuryr/pkg/names"
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
		port("p-live", names.PodTag("live")),
		port("p-dead", names.PodTag("dead")),
		port("p-live-duplicate", names.PodTag("live")),   // created in flight during a crash
		port("p-pending", names.PodTag("being-created")), // pod alive in PodUIDs below, no record yet
		port("p-referenced", names.PodTag("gone-but-kuryrport-remains")),
		port("p-untagged"), // not a pod port: never touched
	}
	owners.PodUIDs["being-created"] = true
	got := OrphanPorts(ports, owners)
	if len(got) != 2 || got[0].ID != "p-dead" || got[1].ID != "p-live-duplicate" {
		t.Errorf("orphan ports = %v, want [p-dead p-live-duplicate]", got)
	}
	nets := []neutron.Network{
		network("n-shop", names.NamespaceTag("shop")),
		network("n-old", names.NamespaceTag("old")),
		network("n-shared"), // the default pod network: never touched
	}
	gotN := OrphanNetworks(nets, owners)
	if len(gotN) != 1 || gotN[0].ID != "n-old" {
		t.Errorf("orphan networks = %v, want [n-old]", gotN)
	}
}

func TestOrphanPoolPorts(t *testing.T) {
	pool := func(id, node string) neutron.Port { return port(id, names.ClusterTag("c"), names.PoolTag(node)) }
	ports := []neutron.Port{
		pool("free-live-node", "n1"),
		pool("free-gone-node", "n9"),
		pool("in-use-gone-node", "n9"), // its pod's KuryrPort still names it
	}
	tests := []struct {
		name        string
		poolEnabled bool
		want        []string
	}{
		{"pools on: only the unused ports of removed nodes", true, []string{"free-gone-node"}},
		{"pools off: every unused pooled port", false, []string{"free-live-node", "free-gone-node"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := Owners{PortIDs: map[string]bool{"in-use-gone-node": true}, Nodes: map[string]bool{"n1": true}, PoolEnabled: tt.poolEnabled}
			var got []string
			for _, p := range OrphanPorts(ports, o) {
				got = append(got, p.ID)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("orphans %v, want %v", got, tt.want)
			}
		})
	}
}

func TestOrphanNodePortsAndYoungObjects(t *testing.T) {
	now := time.Now()
	aged := func(p neutron.Port, age time.Duration) neutron.Port { p.CreatedAt = now.Add(-age); return p }
	ports := []neutron.Port{
		aged(port("node-live", names.NodeTag("n1")), time.Hour),
		aged(port("node-live-duplicate", names.NodeTag("n1")), time.Hour),
		aged(port("node-gone", names.NodeTag("n9")), time.Hour),
		aged(port("dead-young", names.PodTag("dead")), time.Second),
		aged(port("dead-old", names.PodTag("dead")), time.Hour),
	}
	o := Owners{Nodes: map[string]bool{"n1": true}, NodePortOf: map[string]string{"n1": "node-live"}, NodePortsEnabled: true, Cutoff: now.Add(-MinAge)}
	var got []string
	for _, p := range OrphanPorts(ports, o) {
		got = append(got, p.ID)
	}
	if want := []string{"node-live-duplicate", "node-gone", "dead-old"}; !reflect.DeepEqual(got, want) {
		t.Errorf("orphans %v, want %v", got, want)
	}
}

// A refuse port is kept while its node exists, refusing is on and the
// node's annotation names it.
func TestOrphanRefusePorts(t *testing.T) {
	ports := []neutron.Port{port("live", names.RefuseTag("n1")), port("duplicate", names.RefuseTag("n1")),
		port("gone-node", names.RefuseTag("n2"))}
	o := Owners{Nodes: map[string]bool{"n1": true}, RefusePortOf: map[string]string{"n1": "live"}, RefusePortsEnabled: true}
	ids := func() []string {
		var out []string
		for _, p := range OrphanPorts(ports, o) {
			out = append(out, p.ID)
		}
		return out
	}
	if got, want := ids(), []string{"duplicate", "gone-node"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("orphans %v, want %v", got, want)
	}
	o.RefusePortsEnabled = false
	if got, want := ids(), []string{"live", "duplicate", "gone-node"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("refusing off: orphans %v, want %v", got, want)
	}
}

// A port past MinAge that Neutron may still be creating (bound to a host
// but not bound yet, or a VM's younger than the bind timeout) is spared:
// deleted meanwhile, it can leave a stale OVN port behind.
func TestOrphanPortsSpareThoseStillBeingCreated(t *testing.T) {
	now := time.Now()
	dead := func(id, host, vifType string, age time.Duration) neutron.Port {
		p := port(id, names.PodTag("dead"))
		p.HostID, p.VIFType, p.CreatedAt = host, vifType, now.Add(-age)
		return p
	}
	ports := []neutron.Port{
		dead("bound", "n1", "ovs", 45*time.Second),
		dead("being-bound", "n1", neutron.VIFTypeUnbound, 45*time.Second),
		dead("never-bound", "n1", neutron.VIFTypeUnbound, 2*time.Minute),
		dead("vm-young", "", neutron.VIFTypeUnbound, 45*time.Second),
		dead("vm-old", "", neutron.VIFTypeUnbound, 2*time.Minute),
	}
	o := Owners{Cutoff: now.Add(-MinAge), ListedAt: now, BindTimeout: time.Minute}
	var got []string
	for _, p := range OrphanPorts(ports, o) {
		got = append(got, p.ID)
	}
	if want := []string{"bound", "never-bound", "vm-old"}; !reflect.DeepEqual(got, want) {
		t.Errorf("orphans %v, want %v", got, want)
	}
}
