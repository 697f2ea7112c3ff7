package kuryrport

import (
	"context"
	"slices"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	kuryrv1 "github.com/kuryr-k8s/kuryr/api/v1"
	"github.com/kuryr-k8s/kuryr/pkg/neutron"
)

func kuryrScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	_ = kuryrv1.AddToScheme(s)
	return s
}

// nodeNetwork is a node's KuryrNetwork in kube-system, ready when ready.
func nodeNetwork(node string, ready bool) *kuryrv1.KuryrNetwork {
	kn := &kuryrv1.KuryrNetwork{
		ObjectMeta: metav1.ObjectMeta{Name: kuryrv1.NodeNetworkName(node), Namespace: "kube-system"},
		Spec:       kuryrv1.KuryrNetworkSpec{NodeName: node, ProjectID: "p"},
	}
	if ready {
		kn.Status = kuryrv1.KuryrNetworkStatus{NetID: "net-" + node, SubnetID: "sub-" + node, RouterID: "r"}
	}
	return kn
}

// A pod's port goes on its node's network once the node's KuryrNetwork
// is ready, and waits (no error) otherwise.
func TestNodeTarget(t *testing.T) {
	now := metav1.NewTime(time.Now())
	deleting := nodeNetwork("node-d", true)
	deleting.DeletionTimestamp, deleting.Finalizers = &now, []string{kuryrv1.KuryrNetworkFinalizer}
	misnamed := nodeNetwork("node-x", true) // named after node-m, for another node
	misnamed.Name = kuryrv1.NodeNetworkName("node-m")
	c := fake.NewClientBuilder().WithScheme(kuryrScheme()).
		WithObjects(nodeNetwork("node-a", true), nodeNetwork("node-b", false), deleting, misnamed).Build()
	target := NodeTarget(c, "kube-system")
	tests := []struct {
		node string
		want Target
		ok   bool
	}{
		{"node-a", Target{NetworkID: "net-node-a", SubnetID: "sub-node-a"}, true},
		{"node-b", Target{}, false}, // not ready yet
		{"node-c", Target{}, false}, // no KuryrNetwork yet
		{"node-d", Target{}, false}, // being deleted
		{"node-m", Target{}, false}, // not this node's
	}
	for _, tt := range tests {
		kp := &kuryrv1.KuryrPort{Spec: kuryrv1.KuryrPortSpec{PodUID: "u", PodNodeName: tt.node}}
		got, ok, err := target(context.Background(), kp)
		if err != nil || ok != tt.ok || got != tt.want {
			t.Errorf("%s: %+v %v %v, want %+v %v", tt.node, got, ok, err, tt.want, tt.ok)
		}
	}
}

// A node's KuryrNetwork becoming ready wakes the waiting KuryrPorts of the
// pods on that node, in every namespace; a namespace's wakes those of its
// namespace.
func TestWaitingOn(t *testing.T) {
	onNode := func(ns, name, node string, done bool) *kuryrv1.KuryrPort {
		kp := &kuryrv1.KuryrPort{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{kuryrv1.NodeNameLabel: node}},
			Spec:       kuryrv1.KuryrPortSpec{PodUID: name, PodNodeName: node},
		}
		if done {
			kp.Status.VIFs = map[string]kuryrv1.VIF{kuryrv1.DefaultInterface: {PortID: "port-" + name, Default: true}}
		}
		return kp
	}
	c := fake.NewClientBuilder().WithScheme(kuryrScheme()).WithObjects(
		onNode("shop", "a1", "node-a", false), onNode("blog", "a2", "node-a", false),
		onNode("shop", "a3", "node-a", true), onNode("shop", "b1", "node-b", false)).Build()
	r := &Reconciler{Client: c}
	nsKN := &kuryrv1.KuryrNetwork{ObjectMeta: metav1.ObjectMeta{Name: "shop", Namespace: "shop"}, Spec: kuryrv1.KuryrNetworkSpec{NsName: "shop"}}
	tests := []struct {
		name string
		kn   client.Object
		want []string
	}{
		{"a node's network", nodeNetwork("node-a", true), []string{"blog/a2", "shop/a1"}},
		{"a namespace's network", nsKN, []string{"shop/a1", "shop/b1"}},
	}
	for _, tt := range tests {
		var got []string
		for _, req := range r.waitingOn(context.Background(), tt.kn) {
			got = append(got, req.String())
		}
		slices.Sort(got)
		if !slices.Equal(got, tt.want) {
			t.Errorf("%s: woke %v, want %v", tt.name, got, tt.want)
		}
	}
}

// In node mode a pod's port is created on its node's network, or taken
// from its node's pool there; a pod on a node whose network is not ready
// waits without a port.
func TestNodeModePorts(t *testing.T) {
	onNode := func(name, uid, node string) *kuryrv1.KuryrPort {
		k := kp(name, uid)
		k.Spec.PodNodeName = node
		return k
	}
	kn := nodeNetwork("node-a", false)
	e := newEnv(t, onNode("web", "uid-1", "node-a"), onNode("api", "uid-2", "node-a"), onNode("db", "uid-3", "node-b"), kn)
	a := e.addTarget("10.11.1.0/24")
	kn.Status = kuryrv1.KuryrNetworkStatus{NetID: a.NetworkID, SubnetID: a.SubnetID, RouterID: "r"}
	if err := e.r.Update(context.Background(), kn); err != nil {
		t.Fatal(err)
	}
	e.r.Target = NodeTarget(e.r.Client, "kube-system")
	pool := NewPool(e.r.Neutron.(*neutron.Client), NodeNetworks(e.r.Client, "kube-system"), PoolSettings{Min: 1, Batch: 1}, e.r.Settings)
	for _, name := range []string{"web", "api", "db"} {
		if name == "api" { // pools on from the second pod
			pool.fillResolved(t, "node-a", "node-b")
			for node, n := range pool.deficits() {
				if err := pool.refill(context.Background(), node, n); err != nil {
					t.Fatal(err)
				}
			}
			e.r.Pool = pool
		}
		if err := e.reconcile(t, name); err != nil {
			t.Fatal(err)
		}
	}
	for _, tt := range []struct{ name, reason string }{{"web", kuryrv1.ReasonCreated}, {"api", kuryrv1.ReasonPooled}} {
		got := e.get(t, tt.name)
		v, ok := got.Status.DefaultVIF()
		port := e.fake.Get("ports", v.PortID)
		c := meta.FindStatusCondition(got.Status.Conditions, kuryrv1.ConditionReady)
		if !ok || v.NetworkID != a.NetworkID || port["binding:host_id"] != "node-a" || c == nil || c.Reason != tt.reason {
			t.Errorf("%s: VIF %+v, port bound to %v, condition %+v; want a %s port on node-a's network %s",
				tt.name, v, port["binding:host_id"], c, tt.reason, a.NetworkID)
		}
	}
	db := e.get(t, "db")
	c := meta.FindStatusCondition(db.Status.Conditions, kuryrv1.ConditionReady)
	if _, ok := db.Status.DefaultVIF(); ok || c == nil || c.Reason != kuryrv1.ReasonWaiting {
		t.Errorf("db on node-b (no network): status %+v, want it waiting", db.Status)
	}
	if pool.FreeCount("node-b") != 0 {
		t.Errorf("node-b, without a network, has %d pooled ports", pool.FreeCount("node-b"))
	}
}
