package kuryrport

import (
	"context"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/event"

	kuryrv1 "github.com/kuryr-k8s/kuryr/api/v1"
	"github.com/kuryr-k8s/kuryr/pkg/names"
	"github.com/kuryr-k8s/kuryr/pkg/neutron"
	"github.com/kuryr-k8s/kuryr/pkg/neutron/neutrontest"
	"github.com/kuryr-k8s/kuryr/pkg/openstack"
)

// newTestPool is a pool on the env's default target.
func newTestPool(t *testing.T, e *env, s PoolSettings) *Pool {
	t.Helper()
	return NewPool(e.r.Neutron.(*neutron.Client), EveryNode(e.r.Target), s, e.r.Settings)
}

// fillResolved declares nodes to fill and learns their targets, as
// start-up does.
func (p *Pool) fillResolved(t *testing.T, nodes ...string) {
	t.Helper()
	for _, n := range nodes {
		p.Fill(n)
	}
	if err := p.resolve(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// filledPool is a test pool that has refilled node with n ports.
func filledPool(t *testing.T, e *env, s PoolSettings, node string, n int) *Pool {
	t.Helper()
	pool := newTestPool(t, e, s)
	pool.fillResolved(t, node)
	if err := pool.refill(context.Background(), node, n); err != nil {
		t.Fatal(err)
	}
	return pool
}

// With a pool, a pod takes a ready port (no Neutron request) and gives it
// back when it goes (no delete), after a restart too.
func TestPooledPortTakenAndReturned(t *testing.T) {
	e := newEnv(t, kp("web", "uid-1"))
	pool := filledPool(t, e, PoolSettings{Min: 2, Batch: 2}, "node-a", 2)
	e.r.Pool = pool
	writes := e.fake.Writes()
	if err := e.reconcile(t, "web"); err != nil {
		t.Fatal(err)
	}
	got := e.get(t, "web")
	v, ok := got.Status.DefaultVIF()
	if !ok || v.VIFType != "ovs" || e.fake.Get("ports", v.PortID)["name"] != "kuryr-pool-port" {
		t.Errorf("vif %+v", v)
	}
	if e.fake.Writes() != writes {
		t.Errorf("taking a pooled port wrote to Neutron: %v", e.fake.Requests)
	}
	if err := e.r.Delete(context.Background(), got); err != nil {
		t.Fatal(err)
	}
	// A restart: a new ledger and pool, loaded as start-up does, with the
	// pod holding the port its status names.
	e.r.Ledger, e.r.Pool = NewLedger(), newTestPool(t, e, PoolSettings{Min: 2, Batch: 2})
	e.r.Pool.load(e.start(t), map[string]string{v.PortID: "uid-1"})
	e.r.Pool.Fill("node-a")
	if err := e.reconcile(t, "web"); err != nil {
		t.Fatal(err)
	}
	if e.fake.Count("ports") != 2 || e.fake.Writes() != writes {
		t.Errorf("release deleted a pooled port: %d ports, %v", e.fake.Count("ports"), e.fake.Requests)
	}
	if e.r.Pool.FreeCount("node-a") != 2 {
		t.Errorf("free ports %d, want both back", e.r.Pool.FreeCount("node-a"))
	}
}

// A port is never free twice, nor free while a pod holds it, whatever
// order releases, retries and loads come in.
func TestPoolNeverHoldsAPortTwice(t *testing.T) {
	e := newEnv(t)
	pool := filledPool(t, e, PoolSettings{Min: 1, Batch: 1}, "node-a", 1)
	target := e.target(t)
	port, ok := pool.Take("node-a", "pod-a", target, false)
	if !ok {
		t.Fatal("no port")
	}
	// A finalize retried after a failed finalizer patch releases twice.
	if r := pool.Release(port, "pod-a"); r != Returned {
		t.Fatalf("release: %v", r)
	}
	if r := pool.Release(port, "pod-a"); r != Returned || pool.FreeCount("node-a") != 1 {
		t.Errorf("second release: %v, %d free", r, pool.FreeCount("node-a"))
	}
	// Loading what Neutron has (a port released while the controller was
	// down is both) adds nothing known.
	ports, _ := e.r.Neutron.(*neutron.Client).ListPorts(context.Background(), nil, "")
	pool.load(ports, nil)
	if pool.FreeCount("node-a") != 1 {
		t.Errorf("%d free after load, want 1", pool.FreeCount("node-a"))
	}
	// Handed out again, a late release of the former holder changes nothing.
	if p, ok := pool.Take("node-a", "pod-b", target, false); !ok || p.ID != port.ID {
		t.Fatal("the port is not free")
	}
	if r := pool.Release(port, "pod-a"); r != NotOurs {
		t.Errorf("a late release of a port another pod holds: %v", r)
	}
	if _, ok := pool.Take("node-a", "pod-c", target, false); ok {
		t.Error("the port pod-b holds was handed out again")
	}
}

// A port the pool retired is deleted; a listing taken before the delete
// does not bring it back.
func TestPoolForgetsDeletedPorts(t *testing.T) {
	e := newEnv(t)
	pool := filledPool(t, e, PoolSettings{Min: 1, Max: 1, Batch: 2}, "node-a", 2)
	a, _ := pool.Take("node-a", "pod-a", e.target(t), false)
	listed, _ := e.r.Neutron.(*neutron.Client).ListPorts(context.Background(), nil, "")
	if r := pool.Release(a, "pod-a"); r != Retire {
		t.Fatalf("over max: %v, want Retire", r)
	}
	pool.Forget(a.ID) // deleted
	pool.load(listed, nil)
	if pool.FreeCount("node-a") != 1 {
		t.Errorf("a deleted port came back: %d free", pool.FreeCount("node-a"))
	}
	// An unknown port (a pod's own, or already deleted) is to be deleted.
	var own neutron.Port
	own.ID = "not-pooled"
	if r := pool.Release(own, "pod-x"); r != Retire {
		t.Errorf("unknown port: %v", r)
	}
}

// unclearRefill is a pool whose refill of node-a (2 ports) Neutron
// committed without answering.
func unclearRefill(t *testing.T, e *env) *Pool {
	t.Helper()
	pool := newTestPool(t, e, PoolSettings{Min: 2, Batch: 2})
	pool.fillResolved(t, "node-a")
	e.fake.Unanswered = unanswered(504)
	if err := pool.refill(context.Background(), "node-a", 2); err == nil {
		t.Fatal("want the unclear error")
	}
	e.fake.Unanswered = nil
	return pool
}

// round refills every node below its minimum, as a pool round does.
func (p *Pool) round(t *testing.T) {
	t.Helper()
	for node, n := range p.deficits() {
		if err := p.refill(context.Background(), node, n); err != nil {
			t.Fatal(err)
		}
	}
}

// A refill whose outcome is unknown is looked for before another is made.
func TestPoolRefillUnclearAdoptsFirst(t *testing.T) {
	e := newEnv(t)
	pool := unclearRefill(t, e)
	if pool.FreeCount("node-a") != 0 || e.fake.Count("ports") != 2 {
		t.Fatalf("free %d, ports %d", pool.FreeCount("node-a"), e.fake.Count("ports"))
	}
	pool.unclear.Now = func() time.Time { return time.Now().Add(openstack.UnclearSettle) }
	pool.round(t)
	if pool.FreeCount("node-a") != 2 || e.fake.Count("ports") != 2 || e.fake.Requests["POST ports"] != 1 {
		t.Errorf("free %d, ports %d, creates %d: want the 2 committed ports adopted, no new create",
			pool.FreeCount("node-a"), e.fake.Count("ports"), e.fake.Requests["POST ports"])
	}
}

// Ports of an unclear refill that Neutron is still creating (committed,
// not bound yet: a bulk create binds its ports one after the other after
// committing them all) are neither adopted nor made again: the refill stays
// pending until Neutron has bound them.
func TestPoolRefillUnclearWaitsForPortsStillBeingCreated(t *testing.T) {
	e := newEnv(t)
	e.r.Settings.BindTimeout = time.Minute
	pool := unclearRefill(t, e)
	for _, id := range e.fake.IDs("ports") {
		e.fake.Set("ports", id, "binding:vif_type", neutron.VIFTypeUnbound) // committed, not bound yet
	}
	pool.unclear.Now = func() time.Time { return time.Now().Add(openstack.UnclearSettle) }
	pool.round(t)
	if pool.FreeCount("node-a") != 0 || e.fake.Requests["POST ports"] != 1 {
		t.Fatalf("free %d, creates %d: want nothing adopted nor created while Neutron is creating them",
			pool.FreeCount("node-a"), e.fake.Requests["POST ports"])
	}
	for _, id := range e.fake.IDs("ports") {
		e.fake.Set("ports", id, "binding:vif_type", "ovs") // Neutron finished
	}
	pool.round(t)
	if pool.FreeCount("node-a") != 2 || e.fake.Requests["POST ports"] != 1 || e.fake.Writes() != 1 {
		t.Errorf("free %d, creates %d, writes %d: want the 2 ports adopted once bound, nothing else written",
			pool.FreeCount("node-a"), e.fake.Requests["POST ports"], e.fake.Writes())
	}
}

// An unclear refill that made nothing is retried once the settle time
// has passed, not before.
func TestPoolRefillUnclearRetriesAfterSettle(t *testing.T) {
	e := newEnv(t)
	pool := newTestPool(t, e, PoolSettings{Min: 1, Batch: 1})
	pool.fillResolved(t, "node-a")
	e.fake.Fail = func(method, coll string) (int, string) {
		if method == "POST" {
			return 503, "unavailable"
		}
		return 0, ""
	}
	_ = pool.refill(context.Background(), "node-a", 1)
	e.fake.Fail = nil
	if err := pool.refill(context.Background(), "node-a", 1); err != nil || e.fake.Count("ports") != 0 {
		t.Fatalf("retried before the settle time: %v, %d ports", err, e.fake.Count("ports"))
	}
	pool.unclear.Now = func() time.Time { return time.Now().Add(openstack.UnclearSettle) } // the settle time is over
	if err := pool.refill(context.Background(), "node-a", 1); err != nil || pool.FreeCount("node-a") != 1 {
		t.Errorf("after the settle time: %v, %d free", err, pool.FreeCount("node-a"))
	}
}

// A removed node's pool is forgotten, and a refill that was in flight when
// it was removed does not bring it back.
func TestPoolPrunesRemovedNodes(t *testing.T) {
	e := newEnv(t)
	target := e.target(t)
	pool := newTestPool(t, e, PoolSettings{Min: 2, Batch: 1})
	pool.fillResolved(t, "node-a", "node-b")
	for _, node := range []string{"node-a", "node-b"} {
		if err := pool.refill(context.Background(), node, 1); err != nil {
			t.Fatal(err)
		}
	}
	pool.Prune(map[string]bool{"node-a": true})
	if _, ok := pool.Take("node-b", "p1", target, false); ok {
		t.Error("a removed node's port was handed out")
	}
	pool.Prune(map[string]bool{"node-a": true}) // Take marked node-b wanted again
	if d := pool.deficits(); len(d) != 1 || d["node-a"] != 1 {
		t.Errorf("deficits %v, want only node-a's", d)
	}
	// node-b wanted again, and removed while its refill is in flight.
	pool.fillResolved(t, "node-b")
	e.fake.Fail = func(method, coll string) (int, string) {
		if method == "POST" && coll == "ports" {
			pool.Prune(map[string]bool{"node-a": true})
		}
		return 0, ""
	}
	if err := pool.refill(context.Background(), "node-b", 1); err != nil {
		t.Fatal(err)
	}
	e.fake.Fail = nil
	if _, ok := pool.Take("node-a", "p2", target, false); !ok {
		t.Error("node-a lost its port")
	}
	pool.Prune(map[string]bool{"node-a": true})
	if _, ok := pool.Take("node-b", "p3", target, false); ok {
		t.Error("a refill for a removed node came back into the pool")
	}
}

// The sweep hands the pool what Neutron has: pooled ports of live nodes it
// does not know (a refill committed after kuryr gave up on it) are adopted,
// and the free ports beyond Max deleted.
func TestPoolAdoptsLateCommitsAndTrims(t *testing.T) {
	e := newEnv(t)
	pool := newTestPool(t, e, PoolSettings{Min: 1, Max: 2, Batch: 1})
	pool.Fill("node-a")
	tag := names.ClusterTag("c1")
	for i := 0; i < 3; i++ {
		e.fake.Add("ports", neutrontest.Object{"tags": []string{tag, names.PoolTag("node-a")}, "binding:host_id": "node-a", "binding:vif_type": "ovs"})
	}
	e.fake.Add("ports", neutrontest.Object{"tags": []string{tag, names.PoolTag("gone-node")}})
	ports, _ := e.r.Neutron.(*neutron.Client).ListPorts(context.Background(), nil, "")
	if n := pool.Adopt(ports, nil, map[string]bool{"node-a": true}); n != 3 {
		t.Fatalf("adopted %d, want the 3 of the live node", n)
	}
	if n := pool.Adopt(ports, nil, map[string]bool{"node-a": true}); n != 0 {
		t.Errorf("adopted %d again", n)
	}
	pool.trim(context.Background())
	if pool.FreeCount("node-a") != 2 || e.fake.Count("ports") != 3 {
		t.Errorf("after trim: %d free, %d ports in Neutron; want 2 and 3", pool.FreeCount("node-a"), e.fake.Count("ports"))
	}
}

// The sweep's adoption spares a pooled port Neutron is still creating
// (committed, not bound yet), unless a pod already holds it: a later sweep
// adopts it once bound.
func TestPoolAdoptSparesPortsStillBeingCreated(t *testing.T) {
	e := newEnv(t)
	e.r.Settings.BindTimeout = time.Minute
	pool := newTestPool(t, e, PoolSettings{Min: 1, Max: 4, Batch: 1})
	pool.Fill("node-a")
	tags := []string{names.ClusterTag("c1"), names.PoolTag("node-a")}
	now := time.Now().UTC().Format(time.RFC3339)
	creating := e.fake.Add("ports", neutrontest.Object{"tags": tags, "binding:host_id": "node-a", "binding:vif_type": "unbound", "created_at": now})
	held := e.fake.Add("ports", neutrontest.Object{"tags": tags, "binding:host_id": "node-a", "binding:vif_type": "unbound", "created_at": now})
	live := map[string]bool{"node-a": true}
	list := func() []neutron.Port {
		ports, _ := e.r.Neutron.(*neutron.Client).ListPorts(context.Background(), nil, "")
		return ports
	}
	if n := pool.Adopt(list(), map[string]string{held: "uid-1"}, live); n != 0 || pool.FreeCount("node-a") != 0 {
		t.Fatalf("adopted %d free, %d: want the held port known, the one being created left alone", n, pool.FreeCount("node-a"))
	}
	e.fake.Set("ports", creating, "binding:vif_type", "ovs")
	if n := pool.Adopt(list(), nil, live); n != 1 || pool.FreeCount("node-a") != 1 {
		t.Errorf("once bound: adopted %d, %d free; want 1", n, pool.FreeCount("node-a"))
	}
}

// A trim whose delete Neutron committed without answering leaves the port
// retiring, neither handed out nor counted free: a pool that put it back
// would hand out a port Neutron no longer has, and count it.
func TestPoolTrimUnclearDeleteNotPutBack(t *testing.T) {
	e := newEnv(t)
	pool := newTestPool(t, e, PoolSettings{Min: 1, Max: 1, Batch: 1})
	pool.Fill("node-a")
	tag := names.ClusterTag("c1")
	for i := 0; i < 2; i++ {
		e.fake.Add("ports", neutrontest.Object{"tags": []string{tag, names.PoolTag("node-a")}, "binding:host_id": "node-a", "binding:vif_type": "ovs"})
	}
	ports, _ := e.r.Neutron.(*neutron.Client).ListPorts(context.Background(), nil, "")
	pool.Adopt(ports, nil, map[string]bool{"node-a": true})
	e.fake.Unanswered = unansweredOn("DELETE", 504)
	pool.trim(context.Background())
	e.fake.Unanswered = nil
	if pool.FreeCount("node-a") != 1 || e.fake.Count("ports") != 1 {
		t.Errorf("after an unanswered trim: %d free, %d ports in Neutron; want 1 and 1", pool.FreeCount("node-a"), e.fake.Count("ports"))
	}
}

// A pooled port the pool learnt from a listing taken while Neutron was
// still binding it (the sweep lists a refill's ports before the refill
// returns) is re-read when taken, not replaced as "never bound".
func TestPooledPortListedUnboundIsReread(t *testing.T) {
	e := newEnv(t, kp("web", "uid-1"))
	filledPool(t, e, PoolSettings{Min: 1, Batch: 1}, "node-a", 1) // the ports Neutron has
	listed, err := e.r.Neutron.(*neutron.Client).ListPorts(context.Background(), nil, "")
	if err != nil || len(listed) != 1 {
		t.Fatalf("%d ports, %v", len(listed), err)
	}
	listed[0].VIFType, listed[0].CreatedAt = neutron.VIFTypeUnbound, time.Now().Add(-time.Hour)
	pool := newTestPool(t, e, PoolSettings{Min: 1, Batch: 1})
	if n := pool.Adopt(listed, nil, map[string]bool{"node-a": true}); n != 1 {
		t.Fatalf("adopted %d", n)
	}
	e.r.Pool = pool
	if err := e.reconcile(t, "web"); err != nil {
		t.Fatal(err)
	}
	v, ok := e.get(t, "web").Status.DefaultVIF()
	if !ok || v.PortID != listed[0].ID || e.fake.Requests["DELETE ports"] != 0 || e.fake.Requests["POST ports"] != 1 {
		t.Errorf("vif %q (want the pooled %s), requests %v", v.PortID, listed[0].ID, e.fake.Requests)
	}
}

// A refill that is answered starts the settle time over: the next unclear
// one waits the base time, not the doubled one of earlier strikes.
func TestPoolRefillAnsweredClearsStrikes(t *testing.T) {
	e := newEnv(t)
	pool := newTestPool(t, e, PoolSettings{Min: 1, Batch: 1})
	pool.fillResolved(t, "node-a")
	pool.unclear.Mark("node-a")
	pool.unclear.GiveUp("node-a") // a strike: the next settle would be doubled
	if err := pool.refill(context.Background(), "node-a", 1); err != nil {
		t.Fatal(err)
	}
	pool.unclear.Mark("node-a")
	if _, left := pool.unclear.Pending("node-a"); left > openstack.UnclearSettle {
		t.Errorf("settle %s after an answered refill, want at most %s", left, openstack.UnclearSettle)
	}
}

// defaultGroups gives every pod the same groups, and can tell them
// without a pod (as the open groups of NetworkPolicies).
type defaultGroups []string

func (d defaultGroups) Groups(context.Context, *kuryrv1.KuryrPort) ([]string, error) { return d, nil }
func (d defaultGroups) DefaultGroups(context.Context) ([]string, error)              { return d, nil }

// A pool whose ports are made with the groups a pod nothing selects
// carries hands such a pod its port without a write; without them, the
// port's groups are written when it is taken.
func TestPooledPortCarriesDefaultGroups(t *testing.T) {
	for _, withDefaults := range []bool{false, true} {
		e := newEnv(t, kp("web", "uid-1"))
		src := defaultGroups{"sg-open-egress", "sg-open-ingress"}
		e.r.Groups, e.r.GroupPorts = src, e.r.Neutron.(*neutron.Client)
		pool := newTestPool(t, e, PoolSettings{Min: 1, Batch: 1})
		if withDefaults {
			pool.Defaults = src
		}
		pool.fillResolved(t, "node-a")
		if err := pool.refill(context.Background(), "node-a", 1); err != nil {
			t.Fatal(err)
		}
		e.r.Pool = pool
		writes := e.fake.Writes()
		if err := e.reconcile(t, "web"); err != nil {
			t.Fatal(err)
		}
		v, _ := e.get(t, "web").Status.DefaultVIF()
		if got := portGroups(t, e, v.PortID); !slices.Equal(got, []string{"sg", "sg-open-egress", "sg-open-ingress"}) {
			t.Errorf("defaults %v: port groups %v", withDefaults, got)
		}
		want := 1
		if withDefaults {
			want = 0
		}
		if n := e.fake.Writes() - writes; n != want {
			t.Errorf("defaults %v: %d writes taking the pooled port, want %d: %v", withDefaults, n, want, e.fake.Requests)
		}
		// Released and taken again by another pod: the pool's copy says
		// what the port carries, so the second pod gets its groups too.
		if err := e.r.Delete(context.Background(), e.get(t, "web")); err != nil {
			t.Fatal(err)
		}
		if err := e.reconcile(t, "web"); err != nil {
			t.Fatal(err)
		}
		if err := e.r.Create(context.Background(), kp("web2", "uid-2")); err != nil {
			t.Fatal(err)
		}
		if err := e.reconcile(t, "web2"); err != nil {
			t.Fatal(err)
		}
		v2, _ := e.get(t, "web2").Status.DefaultVIF()
		if v2.PortID != v.PortID {
			t.Fatalf("defaults %v: second pod got port %s, want the released %s", withDefaults, v2.PortID, v.PortID)
		}
		if got := portGroups(t, e, v2.PortID); !slices.Equal(got, []string{"sg", "sg-open-egress", "sg-open-ingress"}) {
			t.Errorf("defaults %v: port groups %v after release and retake", withDefaults, got)
		}
	}
}

// TestNodesThatAppearAreFilled: a node that joins after start-up gets its
// pool from its Node's creation, before any pod of it asks; so does one
// whose Node was deleted (its pool pruned) and made again under its name.
func TestNodesThatAppearAreFilled(t *testing.T) {
	e := newEnv(t)
	pool := newTestPool(t, e, PoolSettings{Min: 2, Batch: 2})
	created := func(name string) {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
		fillNewNodes(pool).Create(context.Background(), event.CreateEvent{Object: n}, nil)
		if err := pool.resolve(context.Background()); err != nil {
			t.Fatal(err)
		}
		pool.round(t)
	}
	created("node-new")
	if n := pool.FreeCount("node-new"); n != 2 {
		t.Fatalf("a node created after start-up: %d free ports, want 2", n)
	}
	pool.Prune(map[string]bool{}) // its Node deleted
	if n := pool.FreeCount("node-new"); n != 0 {
		t.Fatalf("a deleted node: %d free ports, want 0", n)
	}
	created("node-new")
	if n := pool.FreeCount("node-new"); n != 2 {
		t.Errorf("a node made again under its name: %d free ports, want 2", n)
	}
}
