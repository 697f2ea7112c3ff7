package cleanup

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/kuryr-k8s/kuryr/pkg/names"
	"github.com/kuryr-k8s/kuryr/pkg/neutron"
	"github.com/kuryr-k8s/kuryr/pkg/neutron/neutrontest"
)

func TestOrphanNetworks(t *testing.T) {
	now := time.Now()
	aged := func(n neutron.Network, age time.Duration) neutron.Network { n.CreatedAt = now.Add(-age); return n }
	nets := []neutron.Network{
		aged(network("ns-live", names.NamespaceTag("shop")), time.Hour),
		aged(network("ns-gone", names.NamespaceTag("old")), time.Hour),
		aged(network("node-live", names.NodeNetworkTag("n1")), time.Hour),         // no KuryrNetwork (another mode)
		aged(network("node-live-with-kn", names.NodeNetworkTag("n2")), time.Hour), // the usual case
		aged(network("node-gone-with-kn", names.NodeNetworkTag("n8")), time.Hour), // its finalizer's
		aged(network("node-gone", names.NodeNetworkTag("n9")), time.Hour),         // the sweep's
		aged(network("node-gone-young", names.NodeNetworkTag("n7")), time.Second), // its owner may not show yet
		aged(network("node-mgmt-tag", names.NodeTag("n9")), time.Hour),            // a management port's tag: not a pod network
		aged(network("shared"), time.Hour),                                        // the default pod network
	}
	o := Owners{
		Namespaces:   map[string]bool{"shop": true},
		Nodes:        map[string]bool{"n1": true, "n2": true},
		NetworkNodes: map[string]bool{"n2": true, "n8": true},
		Cutoff:       now.Add(-MinAge),
	}
	var got []string
	for _, n := range OrphanNetworks(nets, o) {
		got = append(got, n.ID)
	}
	if want := []string{"ns-gone", "node-gone"}; !reflect.DeepEqual(got, want) {
		t.Errorf("orphan networks %v, want %v", got, want)
	}
}

// The sweep deletes a removed node's network (router interface, then the
// network) once the ports on it are gone, the orphaned ones it deletes
// itself first; it keeps one that a live pod's port is still on, and never
// touches a live node's network.
func TestSweepNodeNetworks(t *testing.T) {
	old := time.Now().Add(-time.Hour).UTC().Format(time.RFC3339)
	tests := []struct {
		name      string
		node      string // whose network
		live      bool   // the node exists
		portOwner string // a pod port on it: "live", "dead", or none
		wantGone  bool
	}{
		{"removed node, no ports", "n9", false, "", true},
		{"removed node, an orphaned pod port", "n9", false, "dead", true},
		{"removed node, a live pod's port", "n9", false, "live", false},
		{"live node without its KuryrNetwork", "n1", true, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fn := neutrontest.New(t)
			nc := neutron.New(fn.Client(t))
			tag := names.ClusterTag("c1")
			net := fn.Add("networks", neutrontest.Object{"tags": []string{tag, names.NodeNetworkTag(tt.node)}, "created_at": old})
			sub := fn.Add("subnets", neutrontest.Object{"network_id": net, "cidr": "10.11.9.0/24"})
			fn.Get("networks", net)["subnets"] = []string{sub}
			if err := nc.EnsureRouterInterface(context.Background(), "r", sub); err != nil {
				t.Fatal(err)
			}
			objs := []client.Object{&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "live"}}}
			if tt.live {
				objs = append(objs, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: tt.node}})
			}
			if tt.portOwner != "" {
				fn.Add("ports", neutrontest.Object{"network_id": net, "device_owner": "compute:kuryr", "created_at": old,
					"tags": []string{tag, names.PodTag(tt.portOwner)}})
			}
			sw := &Sweeper{Client: fake.NewClientBuilder().WithScheme(sweepScheme()).WithObjects(objs...).Build(),
				Neutron: nc, Ledger: forgotten{}, Cluster: "c1", Router: "r"}
			if err := sw.Sweep(context.Background(), logr.Discard()); err != nil {
				t.Fatal(err)
			}
			gone := fn.Get("networks", net) == nil
			attached := false
			for _, p := range listAll(t, nc) {
				attached = attached || p.DeviceOwner == "network:router_interface"
			}
			if gone != tt.wantGone || attached == tt.wantGone {
				t.Errorf("network gone %v, router interface kept %v; want gone %v", gone, attached, tt.wantGone)
			}
		})
	}
}

func listAll(t *testing.T, nc *neutron.Client) []neutron.Port {
	t.Helper()
	ps, err := nc.ListPorts(context.Background(), nil, "")
	if err != nil {
		t.Fatal(err)
	}
	return ps
}

// A dry run reports a removed node's network as the sweep would: with the
// orphaned ports on it counted as gone, and not while a live pod's port is
// on it.
func TestDryRunNodeNetworks(t *testing.T) {
	old := time.Now().Add(-time.Hour).UTC().Format(time.RFC3339)
	fn := neutrontest.New(t)
	tag := names.ClusterTag("c1")
	withDead := fn.Add("networks", neutrontest.Object{"tags": []string{tag, names.NodeNetworkTag("n8")}, "created_at": old})
	withLive := fn.Add("networks", neutrontest.Object{"tags": []string{tag, names.NodeNetworkTag("n9")}, "created_at": old})
	for net, pod := range map[string]string{withDead: "dead", withLive: "live"} {
		fn.Add("ports", neutrontest.Object{"network_id": net, "device_owner": "compute:kuryr", "created_at": old,
			"tags": []string{tag, names.PodTag(pod)}})
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "live"}}
	sw := &Sweeper{Client: fake.NewClientBuilder().WithScheme(sweepScheme()).WithObjects(pod).Build(),
		Neutron: neutron.New(fn.Client(t)), Cluster: "c1"}
	o, err := sw.DryRun(context.Background(), false)
	if err != nil {
		t.Fatal(err)
	}
	if len(o.Networks) != 1 || o.Networks[0].ID != withDead || len(o.Ports) != 1 {
		t.Errorf("networks %v, ports %v: want only %s (its port an orphan too)", o.Networks, o.Ports, withDead)
	}
}
