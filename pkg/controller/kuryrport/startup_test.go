package kuryrport

import (
	"context"
	"testing"
	"time"

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

type synced struct{}

func (synced) WaitForCacheSync(context.Context) bool { return true }

// Start-up loads the ledger and the pool (with the pods holding pooled
// ports) before it lets anything be reconciled, retrying while Neutron
// fails.
func TestStartupLoadsLedgerAndPool(t *testing.T) {
	e := newEnv(t)
	tag := names.ClusterTag("c1")
	podPort := e.fake.Add("ports", neutrontest.Object{"tags": []string{tag, names.PodTag("uid-1")}, "binding:vif_type": "ovs"})
	target := e.target(t)
	onTarget := func() neutrontest.Object {
		return neutrontest.Object{"tags": []string{tag, names.PoolTag("node-a")}, "network_id": target.NetworkID, "binding:host_id": "node-a",
			"fixed_ips": []neutrontest.Object{{"subnet_id": target.SubnetID, "ip_address": "10.10.0.50"}}}
	}
	held := e.fake.Add("ports", onTarget())
	free := e.fake.Add("ports", onTarget())
	s := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(s)
	_ = kuryrv1.AddToScheme(s)
	holder := &kuryrv1.KuryrPort{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns"},
		Spec:   kuryrv1.KuryrPortSpec{PodUID: "uid-2", PodNodeName: "node-a"},
		Status: kuryrv1.KuryrPortStatus{VIFs: map[string]kuryrv1.VIF{kuryrv1.DefaultInterface: {PortID: held}}}}
	c := fake.NewClientBuilder().WithScheme(s).WithObjects(holder, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a"}}).Build()
	pool := NewPool(e.r.Neutron.(*neutron.Client), EveryNode(e.r.Target), PoolSettings{Min: 1, Batch: 1}, e.r.Settings)
	fails := 2
	e.fake.Fail = func(method, coll string) (int, string) {
		if method == "GET" && coll == "ports" && fails > 0 {
			fails--
			return 503, "unavailable"
		}
		return 0, ""
	}
	st := NewStartup(Startup{Client: c, Cache: synced{}, Neutron: e.r.Neutron.(*neutron.Client), Cluster: "c1",
		Ledger: e.r.Ledger, Pool: pool})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = st.Start(ctx) }()
	select {
	case <-st.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("start-up never completed")
	}
	if p, ok := e.r.Ledger.Lookup("uid-1"); !ok || p.ID != podPort {
		t.Errorf("ledger: %v %v", p.ID, ok)
	}
	if r := pool.Release(neutron.Port{}, "x"); r != Retire {
		t.Errorf("unknown port: %v", r)
	}
	got, ok := pool.Take("node-a", "uid-3", target, false)
	if !ok || got.ID != free {
		t.Errorf("took %q, want the free port %s (not %s, which uid-2 holds)", got.ID, free, held)
	}
}
