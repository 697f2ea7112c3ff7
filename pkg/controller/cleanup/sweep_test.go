package cleanup

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	kuryrv1 "github.com/kuryr-k8s/kuryr/api/v1"
	"github.com/kuryr-k8s/kuryr/pkg/names"
	"github.com/kuryr-k8s/kuryr/pkg/neutron"
	"github.com/kuryr-k8s/kuryr/pkg/neutron/neutrontest"
)

type forgotten map[string]string

func (f forgotten) ForgetPort(uid, id string) { f[uid] = id }

func TestSweepDeletesOnlyOrphans(t *testing.T) {
	fn := neutrontest.New(t)
	tag := names.ClusterTag("c1")
	live := fn.Add("ports", neutrontest.Object{"tags": []string{tag, names.PodTag("live")}})
	dead := fn.Add("ports", neutrontest.Object{"tags": []string{tag, names.PodTag("dead")}})
	other := fn.Add("ports", neutrontest.Object{"tags": []string{names.ClusterTag("another-cluster"), names.PodTag("dead")}})
	net := fn.Add("networks", neutrontest.Object{"tags": []string{tag, names.NamespaceTag("gone")}, "subnets": []string{}})

	s := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(s)
	_ = kuryrv1.AddToScheme(s)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "live"}}
	f := forgotten{}
	sw := &Sweeper{Client: fake.NewClientBuilder().WithScheme(s).WithObjects(pod).Build(),
		Neutron: neutron.New(fn.Client(t)), Ledger: f, Cluster: "c1", Router: "r"}
	if err := sw.Sweep(context.Background(), logr.Discard()); err != nil {
		t.Fatal(err)
	}
	if fn.Get("ports", live) == nil || fn.Get("ports", other) == nil {
		t.Error("deleted a port that is not an orphan of this cluster")
	}
	if fn.Get("ports", dead) != nil || fn.Get("networks", net) != nil {
		t.Error("left an orphan")
	}
	if f["dead"] != dead {
		t.Errorf("ledger not told: %v", f)
	}
	before := fn.Writes()
	if err := sw.Sweep(context.Background(), logr.Discard()); err != nil {
		t.Fatal(err)
	}
	if fn.Writes() != before {
		t.Error("a sweep with nothing orphaned wrote to Neutron")
	}
}

func sweepScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(s)
	_ = kuryrv1.AddToScheme(s)
	return s
}

// The sweep lists Neutron before it reads Kubernetes: a pod whose port is
// created between the two steps keeps its port.
func TestSweepListsNeutronFirst(t *testing.T) {
	fn := neutrontest.New(t)
	tag := names.ClusterTag("c1")
	c := fake.NewClientBuilder().WithScheme(sweepScheme()).Build()
	var created string
	fn.Fail = func(method, coll string) (int, string) {
		if method == "GET" && coll == "ports" && created == "" {
			// Between the sweep's two steps: a pod appears and gets its port.
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "new", Namespace: "ns", UID: "new-pod"}}
			if err := c.Create(context.Background(), pod); err != nil {
				t.Error(err)
			}
			created = fn.Add("ports", neutrontest.Object{"tags": []string{tag, names.PodTag("new-pod")}})
		}
		return 0, ""
	}
	sw := &Sweeper{Client: c, Neutron: neutron.New(fn.Client(t)), Ledger: forgotten{}, Cluster: "c1", Router: "r"}
	if err := sw.Sweep(context.Background(), logr.Discard()); err != nil {
		t.Fatal(err)
	}
	if fn.Get("ports", created) == nil {
		t.Error("the sweep deleted the port of a pod created while it ran")
	}
}

// Ports younger than MinAge are spared: their owner may not be visible yet.
func TestSweepSparesYoungPorts(t *testing.T) {
	fn := neutrontest.New(t)
	young := fn.Add("ports", neutrontest.Object{"tags": []string{names.ClusterTag("c1"), names.PodTag("unknown")},
		"created_at": time.Now().UTC().Format("2006-01-02T15:04:05Z")})
	sw := &Sweeper{Client: fake.NewClientBuilder().WithScheme(sweepScheme()).Build(),
		Neutron: neutron.New(fn.Client(t)), Ledger: forgotten{}, Cluster: "c1", Router: "r"}
	if err := sw.Sweep(context.Background(), logr.Discard()); err != nil {
		t.Fatal(err)
	}
	if fn.Get("ports", young) == nil {
		t.Error("a young port was deleted")
	}
}

// One failing delete does not stop the sweep.
func TestSweepCarriesOnPastFailures(t *testing.T) {
	fn := neutrontest.New(t)
	tag := names.ClusterTag("c1")
	fn.Add("ports", neutrontest.Object{"tags": []string{tag, names.PodTag("dead-1")}})
	fn.Add("ports", neutrontest.Object{"tags": []string{tag, names.PodTag("dead-2")}})
	deletes := 0
	fn.Fail = func(method, coll string) (int, string) {
		if method == "DELETE" {
			if deletes++; deletes == 1 {
				return 500, "internal error" // whichever goes first fails
			}
		}
		return 0, ""
	}
	sw := &Sweeper{Client: fake.NewClientBuilder().WithScheme(sweepScheme()).Build(),
		Neutron: neutron.New(fn.Client(t)), Ledger: forgotten{}, Cluster: "c1", Router: "r"}
	if err := sw.Sweep(context.Background(), logr.Discard()); err == nil {
		t.Error("the failure was not reported")
	}
	if fn.Count("ports") != 1 {
		t.Errorf("%d ports left, want 1: the sweep stopped at the failure", fn.Count("ports"))
	}
}

// adopter records what the sweep hands the pool.
type adopter struct{ adopted []string }

func (a *adopter) Prune(map[string]bool) {}
func (a *adopter) Adopt(ports []neutron.Port, _ map[string]string, live map[string]bool) int {
	for _, p := range ports {
		a.adopted = append(a.adopted, p.ID)
	}
	return len(ports)
}

// The pool adopts only settled pooled ports: a young one may belong to a
// refill still under way, listed before Neutron bound it.
func TestSweepAdoptsOnlySettledPoolPorts(t *testing.T) {
	fn := neutrontest.New(t)
	tags := []string{names.ClusterTag("c1"), names.PoolTag("n1")}
	old := fn.Add("ports", neutrontest.Object{"tags": tags, "created_at": time.Now().Add(-time.Hour).UTC().Format(time.RFC3339)})
	fn.Add("ports", neutrontest.Object{"tags": tags, "created_at": time.Now().UTC().Format(time.RFC3339)})
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}
	a := &adopter{}
	sw := &Sweeper{Client: fake.NewClientBuilder().WithScheme(sweepScheme()).WithObjects(node).Build(),
		Neutron: neutron.New(fn.Client(t)), Ledger: forgotten{}, Cluster: "c1", Router: "r", Pool: a}
	if err := sw.Sweep(context.Background(), logr.Discard()); err != nil {
		t.Fatal(err)
	}
	if len(a.adopted) != 1 || a.adopted[0] != old || fn.Count("ports") != 2 {
		t.Errorf("adopted %v (want only %s), %d ports left", a.adopted, old, fn.Count("ports"))
	}
}

// A failed sweep is tried again soon, not at the next planned sweep (a
// restarted controller's first sweep may meet a busy Neutron: the next
// planned one is Settle later).
func TestStartRetriesAFailedSweepSoon(t *testing.T) {
	fn := neutrontest.New(t)
	dead := fn.Add("ports", neutrontest.Object{"tags": []string{names.ClusterTag("c1"), names.PodTag("dead")}})
	lists := 0
	fn.Fail = func(method, coll string) (int, string) {
		if method == "GET" && coll == "ports" {
			if lists++; lists <= 2 {
				return 503, "busy"
			}
		}
		return 0, ""
	}
	stop := startSweeper(t, fn, time.Hour, 10*time.Millisecond)
	waitUntil(10*time.Second, func() bool { return fn.Get("ports", dead) == nil })
	stop()
	if fn.Get("ports", dead) != nil {
		t.Fatalf("the orphan is still there after %d listings: a failed sweep waited for the next planned one", lists)
	}
}

// startSweeper runs a sweeper of fn's ports (Period an hour) until the
// returned stop.
func startSweeper(t *testing.T, fn *neutrontest.Fake, settle, retry time.Duration) (stop func()) {
	t.Helper()
	ready := make(chan struct{})
	close(ready)
	sw := &Sweeper{Client: fake.NewClientBuilder().WithScheme(sweepScheme()).Build(),
		Neutron: neutron.New(fn.Client(t)), Ledger: forgotten{}, Cluster: "c1", Router: "r",
		Period: time.Hour, Settle: settle, Retry: retry, Ready: ready}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- sw.Start(ctx) }()
	return func() {
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
}

func waitUntil(timeout time.Duration, cond func() bool) {
	for deadline := time.Now().Add(timeout); !cond() && time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond)
	}
}

func TestRetryWait(t *testing.T) {
	for _, c := range []struct {
		failures int
		want     time.Duration
	}{{1, 5 * time.Second}, {2, 10 * time.Second}, {3, 20 * time.Second}, {11, 5120 * time.Second}, {50, 5120 * time.Second}} {
		if got := retryWait(RetryMin, c.failures); got != c.want {
			t.Errorf("retryWait(%d) = %s, want %s", c.failures, got, c.want)
		}
	}
}

// A retry that starts before the planned sweep and ends after it does not
// stand for it: the planned sweep still runs (it is there for what a
// predecessor committed late).
func TestStartRetryDoesNotReplaceThePlannedSweep(t *testing.T) {
	fn := neutrontest.New(t)
	var mu sync.Mutex
	lists := 0
	fn.Fail = func(method, coll string) (int, string) {
		if method != "GET" || coll != "ports" {
			return 0, ""
		}
		mu.Lock()
		lists++
		n := lists
		mu.Unlock()
		switch n {
		case 1, 2:
			return 503, "busy"
		case 3: // started before the Settle sweep is due, ends after
			time.Sleep(1200 * time.Millisecond)
		}
		return 0, ""
	}
	stop := startSweeper(t, fn, time.Second, 100*time.Millisecond)
	count := func() int { mu.Lock(); defer mu.Unlock(); return lists }
	waitUntil(5*time.Second, func() bool { return count() >= 4 })
	stop()
	if n := count(); n < 4 {
		t.Fatalf("%d listings: the Settle sweep did not run after the retry that overlapped it", n)
	}
}
