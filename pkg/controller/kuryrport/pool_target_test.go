package kuryrport

import (
	"context"
	"testing"

	"github.com/kuryr-k8s/kuryr/pkg/names"
	"github.com/kuryr-k8s/kuryr/pkg/neutron"
	"github.com/kuryr-k8s/kuryr/pkg/neutron/neutrontest"
)

// nodeTargets is a NodeTargetFunc over a map: a node missing from it has
// no target yet.
type nodeTargets map[string]Target

func (m nodeTargets) get(_ context.Context, node string) (Target, bool, error) {
	t, ok := m[node]
	return t, ok, nil
}

// addTarget adds a network with one subnet to the fake Neutron.
func (e *env) addTarget(cidr string) Target {
	net := e.fake.Add("networks", neutrontest.Object{"name": "node-net", "mtu": 1442})
	sub := e.fake.Add("subnets", neutrontest.Object{"network_id": net, "cidr": cidr, "gateway_ip": "10.11.0.1", "ip_version": 4})
	return Target{NetworkID: net, SubnetID: sub}
}

// In node mode each node's pool is on its own network: refills wait until
// the node's target is known, create the node's ports on it (bound to the
// node), and a pod is handed only a port on the target it asks for.
func TestPoolPerNodeTargets(t *testing.T) {
	e := newEnv(t)
	a, b := e.addTarget("10.11.1.0/24"), e.addTarget("10.11.2.0/24")
	targets := nodeTargets{"node-a": a, "node-b": b} // node-c: its network is not ready
	pool := NewPool(e.r.Neutron.(*neutron.Client), targets.get, PoolSettings{Min: 2, Batch: 2}, e.r.Settings)
	pool.fillResolved(t, "node-a", "node-b", "node-c")
	deficits := pool.deficits()
	if len(deficits) != 2 || deficits["node-c"] != 0 {
		t.Fatalf("deficits %v, want node-a's and node-b's only", deficits)
	}
	for node, n := range deficits {
		if err := pool.refill(context.Background(), node, n); err != nil {
			t.Fatal(err)
		}
	}
	if err := pool.refill(context.Background(), "node-c", 2); err != nil || e.fake.Count("ports") != 4 {
		t.Fatalf("a node without a target was refilled: %v, %d ports", err, e.fake.Count("ports"))
	}
	tests := []struct {
		name   string
		node   string
		target Target
		want   bool
	}{
		{"its own node's network", "node-a", a, true},
		{"another node's network", "node-a", b, false},
		{"no target", "node-b", Target{}, false},
		{"a node without a network", "node-c", a, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, ok := pool.Take(tt.node, "pod-"+tt.name, tt.target, false)
			if ok != tt.want {
				t.Fatalf("took %v, want %v", ok, tt.want)
			}
			if !ok {
				return
			}
			stored := e.fake.Get("ports", p.ID)
			if !on(p, tt.target) || stored["binding:host_id"] != tt.node || names.PoolNodeOf(p.Tags) != tt.node {
				t.Errorf("port %s on %s/%v bound to %v, want on %v bound to %s", p.ID, p.NetworkID, p.FixedIPs, stored["binding:host_id"], tt.target, tt.node)
			}
		})
	}
}

// A node whose network goes (its KuryrNetwork deleted) or changes loses its
// free ports, which are deleted, and gets no refill until it has a target
// again; a port released meanwhile is deleted rather than returned. This
// is what lets a removed node's network be deleted while the node lingers.
func TestPoolDropsPortsOffTarget(t *testing.T) {
	e := newEnv(t)
	old, renewed := e.addTarget("10.11.1.0/24"), e.addTarget("10.11.9.0/24")
	targets := nodeTargets{"node-a": old}
	pool := NewPool(e.r.Neutron.(*neutron.Client), targets.get, PoolSettings{Min: 2, Batch: 3}, e.r.Settings)
	pool.fillResolved(t, "node-a")
	if err := pool.refill(context.Background(), "node-a", 3); err != nil {
		t.Fatal(err)
	}
	held, _ := pool.Take("node-a", "pod-1", old, false)
	delete(targets, "node-a") // the node's KuryrNetwork is being deleted
	if err := pool.resolve(context.Background()); err != nil {
		t.Fatal(err)
	}
	pool.trim(context.Background())
	if pool.FreeCount("node-a") != 0 || e.fake.Count("ports") != 1 || len(pool.deficits()) != 0 {
		t.Fatalf("free %d, ports %d (want the held one only), deficits %v", pool.FreeCount("node-a"), e.fake.Count("ports"), pool.deficits())
	}
	if r := pool.Release(held, "pod-1"); r != Retire {
		t.Errorf("released off target: %v, want Retire", r)
	}
	targets["node-a"] = renewed
	if err := pool.resolve(context.Background()); err != nil {
		t.Fatal(err)
	}
	if d := pool.deficits(); d["node-a"] != 3 {
		t.Fatalf("deficits %v, want node-a refilled on its new network", d)
	}
	if err := pool.refill(context.Background(), "node-a", 3); err != nil {
		t.Fatal(err)
	}
	if p, ok := pool.Take("node-a", "pod-2", renewed, false); !ok || !on(p, renewed) {
		t.Errorf("took %v %+v, want a port on the new network", ok, p.FixedIPs)
	}
}

// Ports the pool learns from Neutron (at start, or adopted by the sweep)
// that are not on their node's target are never handed out and are
// deleted by the next trim.
func TestPoolTrimsLearntPortsOffTarget(t *testing.T) {
	e := newEnv(t)
	target := e.target(t)
	other := e.addTarget("10.11.3.0/24")
	pooled := func(t Target) neutrontest.Object {
		return neutrontest.Object{"tags": []string{names.ClusterTag("c1"), names.PoolTag("node-a")}, "network_id": t.NetworkID, "binding:host_id": "node-a",
			"fixed_ips": []neutrontest.Object{{"subnet_id": t.SubnetID, "ip_address": "10.10.0.9"}}}
	}
	good := e.fake.Add("ports", pooled(target))
	e.fake.Add("ports", pooled(other))
	pool := newTestPool(t, e, PoolSettings{Min: 1, Batch: 1})
	pool.load(e.start(t), nil)
	pool.fillResolved(t, "node-a")
	pool.trim(context.Background())
	if pool.FreeCount("node-a") != 1 || e.fake.Count("ports") != 1 || e.fake.Get("ports", good) == nil {
		t.Errorf("free %d, %d ports in Neutron: want only the one on the target kept", pool.FreeCount("node-a"), e.fake.Count("ports"))
	}
}
