package kuryrnetwork

import (
	"context"
	"slices"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	kuryrv1 "github.com/kuryr-k8s/kuryr/api/v1"
	"github.com/kuryr-k8s/kuryr/pkg/controller/kit/kittest"
	"github.com/kuryr-k8s/kuryr/pkg/names"
	"github.com/kuryr-k8s/kuryr/pkg/neutron"
	"github.com/kuryr-k8s/kuryr/pkg/neutron/neutrontest"
	"github.com/kuryr-k8s/kuryr/pkg/openstack"
)

func scheme() *runtime.Scheme {
	s := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(s)
	_ = kuryrv1.AddToScheme(s)
	return s
}

type env struct {
	r    *Reconciler
	c    client.Client
	fake *neutrontest.Fake
}

// newEnv is a reconciler in namespace and node modes over a fake Neutron,
// holding objs.
func newEnv(t *testing.T, objs ...client.Object) *env {
	t.Helper()
	c := fake.NewClientBuilder().WithScheme(scheme()).WithObjects(objs...).WithStatusSubresource(&kuryrv1.KuryrNetwork{}).Build()
	fn := neutrontest.New(t)
	r := &Reconciler{Client: c, Neutron: neutron.New(fn.Client(t)), Recorder: kittest.None{},
		Settings: Settings{Cluster: "c1", Router: "router-1", SubnetPool: "pool-1", Namespaces: true, Nodes: true}}
	return &env{r: r, c: c, fake: fn}
}

func (e *env) reconcile(t *testing.T, key types.NamespacedName) ctrl.Result {
	t.Helper()
	res, err := e.r.Reconcile(context.Background(), ctrl.Request{NamespacedName: key})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func (e *env) get(t *testing.T, key types.NamespacedName) *kuryrv1.KuryrNetwork {
	t.Helper()
	var kn kuryrv1.KuryrNetwork
	if err := e.c.Get(context.Background(), key, &kn); err != nil {
		t.Fatal(err)
	}
	return &kn
}

func namespaceKN(ns string) *kuryrv1.KuryrNetwork {
	return &kuryrv1.KuryrNetwork{
		ObjectMeta: metav1.ObjectMeta{Name: ns, Namespace: ns, Finalizers: []string{kuryrv1.KuryrNetworkFinalizer}},
		Spec:       kuryrv1.KuryrNetworkSpec{NsName: ns, ProjectID: "p"},
	}
}

func nodeKN(node string) *kuryrv1.KuryrNetwork {
	return &kuryrv1.KuryrNetwork{
		ObjectMeta: metav1.ObjectMeta{Name: kuryrv1.NodeNetworkName(node), Namespace: "kube-system",
			Finalizers: []string{kuryrv1.KuryrNetworkFinalizer}},
		Spec: kuryrv1.KuryrNetworkSpec{NodeName: node, ProjectID: "p"},
	}
}

// A namespace's and a node's KuryrNetwork each get a network named and
// tagged after their owner, a subnet from the pool and a router interface;
// a second pass changes nothing, and deleting the KuryrNetwork removes
// them.
func TestNetworkLifecycle(t *testing.T) {
	tests := []struct {
		name     string
		kn       *kuryrv1.KuryrNetwork
		netName  string
		ownerTag string
	}{
		{"namespace", namespaceKN("shop"), "kuryr-c1-ns-shop", names.NamespaceTag("shop")},
		{"node", nodeKN("worker-1"), "kuryr-c1-node-worker-1", names.NodeNetworkTag("worker-1")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, tt.kn)
			key := client.ObjectKeyFromObject(tt.kn)
			for i := 0; i < 2; i++ { // the second pass must change nothing
				e.reconcile(t, key)
			}
			got := e.get(t, key)
			if !got.Status.Ready() || got.Status.SubnetCIDR == "" {
				t.Fatalf("status %+v", got.Status)
			}
			net := e.fake.Get("networks", got.Status.NetID)
			want := []string{names.ClusterTag("c1"), tt.ownerTag}
			if net["name"] != tt.netName || !slices.Equal(net["tags"].([]string), want) {
				t.Errorf("network %v, want %s tagged %v", net, tt.netName, want)
			}
			if sub := e.fake.Get("subnets", got.Status.SubnetID); !slices.Equal(sub["tags"].([]string), want) {
				t.Errorf("subnet tags %v, want %v", sub["tags"], want)
			}
			if e.fake.Count("networks") != 1 || e.fake.Count("subnets") != 1 || e.fake.Count("ports") != 1 {
				t.Errorf("networks %d subnets %d router ports %d", e.fake.Count("networks"), e.fake.Count("subnets"), e.fake.Count("ports"))
			}
			if err := e.c.Delete(context.Background(), got); err != nil {
				t.Fatal(err)
			}
			e.reconcile(t, key)
			if e.fake.Count("networks") != 0 || e.fake.Count("ports") != 0 {
				t.Errorf("left behind: networks %d router ports %d", e.fake.Count("networks"), e.fake.Count("ports"))
			}
		})
	}
}

// A KuryrNetwork being deleted keeps its network, attached, while ports
// remain on it ("a node's removal releases it once no port uses it"),
// says so, and lets it go once they are gone.
func TestFinalizeWaitsForPorts(t *testing.T) {
	e := newEnv(t, nodeKN("worker-1"))
	key := client.ObjectKeyFromObject(nodeKN("worker-1"))
	e.reconcile(t, key)
	kn := e.get(t, key)
	pod := e.fake.Add("ports", neutrontest.Object{"network_id": kn.Status.NetID, "device_owner": "compute:kuryr"})
	if err := e.c.Delete(context.Background(), kn); err != nil {
		t.Fatal(err)
	}
	if res := e.reconcile(t, key); res.RequeueAfter == 0 {
		t.Error("no recheck while a port remains")
	}
	c := meta.FindStatusCondition(e.get(t, key).Status.Conditions, kuryrv1.ConditionReady)
	if e.fake.Count("networks") != 1 || e.fake.Count("ports") != 2 || c == nil || c.Reason != kuryrv1.ReasonWaiting {
		t.Fatalf("networks %d, ports %d (want the router interface kept), condition %+v",
			e.fake.Count("networks"), e.fake.Count("ports"), c)
	}
	if err := neutron.New(e.fake.Client(t)).DeletePort(context.Background(), pod); err != nil {
		t.Fatal(err)
	}
	e.reconcile(t, key)
	if e.fake.Count("networks") != 0 || e.fake.Count("ports") != 0 {
		t.Errorf("left behind: networks %d ports %d", e.fake.Count("networks"), e.fake.Count("ports"))
	}
	var gone kuryrv1.KuryrNetwork
	if err := e.c.Get(context.Background(), key, &gone); err == nil {
		t.Errorf("the KuryrNetwork is still there: %+v", gone.ObjectMeta)
	}
}

// A KuryrNetwork of another mode gets no network, but its deletion still
// removes the network it has.
func TestOtherModeIsOnlyFinalized(t *testing.T) {
	e := newEnv(t, nodeKN("worker-1"))
	key := client.ObjectKeyFromObject(nodeKN("worker-1"))
	e.reconcile(t, key) // made in node mode
	e.r.Settings.Nodes = false
	kn := e.get(t, key)
	kn.Status = kuryrv1.KuryrNetworkStatus{} // as if never finished
	if err := e.c.Status().Update(context.Background(), kn); err != nil {
		t.Fatal(err)
	}
	writes := e.fake.Writes()
	e.reconcile(t, key)
	if e.get(t, key).Status.Ready() || e.fake.Writes() != writes {
		t.Fatalf("another mode's KuryrNetwork was served: %d Neutron writes", e.fake.Writes()-writes)
	}
	if err := e.c.Delete(context.Background(), kn); err != nil {
		t.Fatal(err)
	}
	e.reconcile(t, key) // found by name: its status was lost
	if e.fake.Count("networks") != 0 || e.fake.Count("ports") != 0 {
		t.Errorf("left behind: networks %d router ports %d", e.fake.Count("networks"), e.fake.Count("ports"))
	}
}

// A network create that went unanswered is looked for by name before it is
// made again: committed, it is adopted; not committed, it is created once
// the settle time is over, not before.
func TestUnansweredCreateLooksFirst(t *testing.T) {
	tests := []struct {
		name      string
		committed bool
	}{
		{"committed without an answer", true},
		{"not committed", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, nodeKN("worker-1"))
			key := client.ObjectKeyFromObject(nodeKN("worker-1"))
			hook := func(method, coll string) (int, string) {
				if method == "POST" && coll == "networks" {
					return 504, "gateway timeout"
				}
				return 0, ""
			}
			if tt.committed {
				e.fake.Unanswered = hook
			} else {
				e.fake.Fail = hook
			}
			if _, err := e.r.Reconcile(context.Background(), ctrl.Request{NamespacedName: key}); err == nil {
				t.Fatal("want the unanswered create's error")
			}
			e.fake.Unanswered, e.fake.Fail = nil, nil
			res := e.reconcile(t, key)
			if tt.committed {
				if !e.get(t, key).Status.Ready() || e.fake.Count("networks") != 1 || e.fake.Requests["POST networks"] != 1 {
					t.Errorf("ready %v, %d networks, %d creates: want the committed one adopted",
						e.get(t, key).Status.Ready(), e.fake.Count("networks"), e.fake.Requests["POST networks"])
				}
				return
			}
			if res.RequeueAfter == 0 || e.fake.Requests["POST networks"] != 1 {
				t.Fatalf("created again before the settle time: %+v, %d creates", res, e.fake.Requests["POST networks"])
			}
			e.r.unclear.Now = func() time.Time { return time.Now().Add(openstack.UnclearSettle) }
			e.reconcile(t, key)
			if !e.get(t, key).Status.Ready() || e.fake.Count("networks") != 1 {
				t.Errorf("after the settle time: ready %v, %d networks", e.get(t, key).Status.Ready(), e.fake.Count("networks"))
			}
		})
	}
}

func TestNames(t *testing.T) {
	tests := []struct{ got, want string }{
		{names.NetworkName("c1", "shop"), "kuryr-c1-ns-shop"},
		{names.NodeNetworkName("c1", "worker-1"), "kuryr-c1-node-worker-1"},
		{kuryrv1.NodeNetworkName("worker-1"), "node-worker-1"},
		{ownerOf(nodeKN("w"), Settings{Cluster: "c"}).network, "kuryr-c-node-w"},
		// nodeName wins over a stray nsName.
		{ownerOf(&kuryrv1.KuryrNetwork{Spec: kuryrv1.KuryrNetworkSpec{NsName: "x", NodeName: "w"}}, Settings{Cluster: "c"}).kind, "node"},
		{ownerOf(namespaceKN("x"), Settings{Cluster: "c"}).kind, "namespace"},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("got %q, want %q", tt.got, tt.want)
		}
	}
}
