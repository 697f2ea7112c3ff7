package kuryrport

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kuryrv1 "github.com/kuryr-k8s/kuryr/api/v1"
	"github.com/kuryr-k8s/kuryr/pkg/controller/nested"
	"github.com/kuryr-k8s/kuryr/pkg/neutron"
	"github.com/kuryr-k8s/kuryr/pkg/neutron/neutrontest"
)

// vlanPool is a pool of the nested env whose node-a is a nested-vlan VM.
func vlanPool(t *testing.T, e *env, s PoolSettings) *Pool {
	t.Helper()
	pool := newTestPool(t, e, s)
	pool.Nested = e.r.Nested
	pool.fillResolved(t, "node-a")
	return pool
}

func subports(e *env, trunk string) map[string]int {
	out := map[string]int{}
	for _, s := range e.fake.Get("trunks", trunk)["sub_ports"].([]neutrontest.Object) {
		out[s["port_id"].(string)] = int(s["segmentation_id"].(float64))
	}
	return out
}

// TestNestedVLANPool: a nested-vlan VM's pool is refilled with unbound
// ports made subports of its trunk in one add_subports; a pod takes one
// with no Neutron write and its VIF names the subport's VLAN id; released,
// the port goes back still a subport (no write either).
func TestNestedVLANPool(t *testing.T) {
	e, parent, trunk := nestedEnv(t, nested.ModeVLAN, kp("web", "uid-1"))
	pool := vlanPool(t, e, PoolSettings{Min: 3, Batch: 3})
	writes := e.fake.Writes()
	if err := pool.refill(context.Background(), "node-a", 3); err != nil {
		t.Fatal(err)
	}
	subs := subports(e, trunk)
	if n := e.fake.Writes() - writes; len(subs) != 3 || n != 2 {
		t.Fatalf("refill: %d subports in %d writes, want 3 in 2 (one bulk create, one add_subports)", len(subs), n)
	}
	for id := range subs {
		if host := e.fake.Get("ports", id)["binding:host_id"]; host != nil && host != "" {
			t.Errorf("pooled subport %s bound to %v", id, host)
		}
	}
	e.r.Pool = pool
	writes = e.fake.Writes()
	if err := e.reconcile(t, "web"); err != nil {
		t.Fatal(err)
	}
	vif, _ := e.get(t, "web").Status.DefaultVIF()
	if vif.Nested == nil || vif.Nested.Mode != kuryrv1.NestedVLAN || vif.Nested.ParentPortID != parent ||
		vif.Nested.VLANID != subs[vif.PortID] || e.get(t, "web").Status.Conditions[0].Reason != kuryrv1.ReasonPooled {
		t.Fatalf("VIF %+v nested %+v, subports %v", vif, vif.Nested, subs)
	}
	if e.fake.Writes() != writes {
		t.Errorf("taking a pooled subport wrote to Neutron: %v", e.fake.Requests)
	}
	deleteKP(t, e, "web")
	if e.fake.Writes() != writes || pool.FreeCount("node-a") != 3 || subports(e, trunk)[vif.PortID] != vif.Nested.VLANID {
		t.Errorf("release: %d writes, %d free, subports %v; want the subport back in the pool as it was",
			e.fake.Writes()-writes, pool.FreeCount("node-a"), subports(e, trunk))
	}
}

// TestNestedPoolKinds: a VM's pooled subport is never handed to a pod that
// needs a port bound to its node, and relabelled a hypervisor, the node's
// free subports are detached and deleted by the next trim; a nested-macvlan
// node gets no pool.
func TestNestedPoolKinds(t *testing.T) {
	e, _, trunk := nestedEnv(t, nested.ModeVLAN)
	pool := vlanPool(t, e, PoolSettings{Min: 2, Batch: 2})
	if err := pool.refill(context.Background(), "node-a", 2); err != nil {
		t.Fatal(err)
	}
	if _, ok := pool.Take("node-a", "hv-pod", e.target(t), false); ok {
		t.Fatal("a subport was handed to a pod that needs a bound port")
	}
	p := e.r.Nested.(*nested.Placer)
	p.Modes.Default = nested.ModeNeutron
	if err := pool.resolve(context.Background()); err != nil {
		t.Fatal(err)
	}
	pool.trim(context.Background())
	if pool.FreeCount("node-a") != 0 || len(subports(e, trunk)) != 0 || e.fake.Count("ports") != 1 {
		t.Errorf("after relabelling: %d free, subports %v, %d ports (want only the VM's)",
			pool.FreeCount("node-a"), subports(e, trunk), e.fake.Count("ports"))
	}
	p.Modes.Default = nested.ModeMacvlan
	if err := pool.resolve(context.Background()); err != nil {
		t.Fatal(err)
	}
	if d := pool.deficits(); len(d) != 0 {
		t.Errorf("a nested-macvlan node is refilled: %v", d)
	}
}

// TestNestedPoolAfterRestart: pooled ports of a VM reloaded from Neutron
// are told from a hypervisor's by their tag (not binding:host_id, which a
// policy may hide); those not attached yet (an unanswered refill, a crash
// before the attach) are attached in one add_subports by the pool's next
// round; the oldest free subport is handed out first (a released one's
// VLAN may still be held by its old pod's namespace).
func TestNestedPoolAfterRestart(t *testing.T) {
	e, _, trunk := nestedEnv(t, nested.ModeVLAN)
	pool := vlanPool(t, e, PoolSettings{Min: 3, Batch: 3})
	created, err := e.r.Neutron.(*neutron.Client).CreatePorts(context.Background(), pool.specs(e.target(t), "node-a", 3, nil, true))
	if err != nil {
		t.Fatal(err)
	}
	restarted := vlanPool(t, e, PoolSettings{Min: 3, Batch: 3})
	restarted.load(e.start(t), nil)
	if n := restarted.FreeCount("node-a"); n != 3 {
		t.Fatalf("%d free after reloading, want 3", n)
	}
	writes := e.fake.Writes()
	restarted.attachFree(context.Background())
	if subs := subports(e, trunk); len(subs) != 3 || e.fake.Writes()-writes != 1 {
		t.Fatalf("subports %v in %d writes, want 3 in one add_subports", subs, e.fake.Writes()-writes)
	}
	restarted.attachFree(context.Background())
	if e.fake.Writes()-writes != 1 {
		t.Errorf("attached ports attached again")
	}
	if p, ok := restarted.Take("node-a", "pod-1", e.target(t), true); !ok || p.ID != created[0].ID {
		t.Errorf("took %s, want the oldest %s", p.ID, created[0].ID)
	}
}

// TestPoolRelabelledWhileDown: a VM node relabelled nested-macvlan, or with
// a label naming no mode, while the controller was down has its free
// subports detached and deleted by the pool's first round after start-up.
func TestPoolRelabelledWhileDown(t *testing.T) {
	for _, mode := range []string{nested.ModeMacvlan, "typo"} {
		e, _, trunk := mixedEnv(t, nested.ModeNeutron, nested.ModeVLAN)
		pool := vlanPool(t, e, PoolSettings{Min: 2, Batch: 2})
		if err := pool.refill(context.Background(), "node-a", 2); err != nil {
			t.Fatal(err)
		}
		nodes := e.r.Nested.(*nested.Placer).Modes.Nodes.(client.Client)
		var n corev1.Node
		if err := nodes.Get(context.Background(), client.ObjectKey{Name: "node-a"}, &n); err != nil {
			t.Fatal(err)
		}
		n.Labels[kuryrv1.PodVIFLabel] = mode
		if err := nodes.Update(context.Background(), &n); err != nil {
			t.Fatal(err)
		}
		restarted := newTestPool(t, e, PoolSettings{Min: 2, Batch: 2})
		restarted.Nested = e.r.Nested
		restarted.load(e.start(t), nil)
		restarted.fillResolved(t, "node-a")
		restarted.trim(context.Background())
		if len(subports(e, trunk)) != 0 || e.fake.Count("ports") != 1 || len(restarted.deficits()) != 0 {
			t.Errorf("%s: subports %v, %d ports, deficits %v; want the pool gone and not refilled",
				mode, subports(e, trunk), e.fake.Count("ports"), restarted.deficits())
		}
	}
}
