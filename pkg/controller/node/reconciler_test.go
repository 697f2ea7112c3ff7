package node

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	kuryrv1 "github.com/kuryr-k8s/kuryr/api/v1"
	"github.com/kuryr-k8s/kuryr/pkg/clusternet"
	"github.com/kuryr-k8s/kuryr/pkg/controller/kit/kittest"
	"github.com/kuryr-k8s/kuryr/pkg/neutron"
	"github.com/kuryr-k8s/kuryr/pkg/neutron/neutrontest"
	"github.com/kuryr-k8s/kuryr/pkg/openstack"
)

type env struct {
	r    *Reconciler
	fake *neutrontest.Fake
}

func newEnv(t *testing.T, objs ...client.Object) *env {
	t.Helper()
	s := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(s)
	fn := neutrontest.New(t)
	net := fn.Add("networks", neutrontest.Object{"name": "nodes", "mtu": 1442})
	sub := fn.Add("subnets", neutrontest.Object{"network_id": net, "cidr": "10.11.0.0/24", "gateway_ip": "10.11.0.1"})
	pods := fn.Add("subnets", neutrontest.Object{"network_id": "x", "cidr": "10.10.0.0/24"})
	pool := fn.Add("subnetpools", neutrontest.Object{"prefixes": []string{"10.10.0.0/16"}, "default_prefixlen": 24, "min_prefixlen": 16, "max_prefixlen": 28})
	nc := neutron.New(fn.Client(t))
	r := &Reconciler{
		Client: fake.NewClientBuilder().WithScheme(s).WithObjects(objs...).Build(), Neutron: nc,
		Info: neutron.NewInfo(nc, time.Minute), Recorder: kittest.None{},
		Settings: Settings{Cluster: "c1", ProjectID: "p", Subnet: sub},
	}
	src := &clusternet.Source{Neutron: nc, Info: r.Info.(*neutron.Info), Subnets: []string{pods, sub}, Pools: []string{pool}}
	r.Settings.Networks = src.Read
	return &env{r: r, fake: fn}
}

func (e *env) reconcile(t *testing.T, name string) ctrl.Result {
	t.Helper()
	res, err := e.r.Reconcile(context.Background(), ctrl.Request{NamespacedName: types.NamespacedName{Name: name}})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func (e *env) annotation(t *testing.T, name string) (kuryrv1.NodePort, bool) {
	t.Helper()
	return e.annotationOf(t, name, kuryrv1.NodePortAnnotation)
}

func (e *env) annotationOf(t *testing.T, name, annotation string) (kuryrv1.NodePort, bool) {
	t.Helper()
	var n corev1.Node
	if err := e.r.Get(context.Background(), types.NamespacedName{Name: name}, &n); err != nil {
		t.Fatal(err)
	}
	raw, ok := n.Annotations[annotation]
	var np kuryrv1.NodePort
	if ok {
		if err := json.Unmarshal([]byte(raw), &np); err != nil {
			t.Fatal(err)
		}
	}
	return np, ok
}

func node(name string) *corev1.Node { return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}} }

func TestNodeGetsPortAndRoutes(t *testing.T) {
	e := newEnv(t, node("n1"))
	e.reconcile(t, "n1")
	np, ok := e.annotation(t, "n1")
	if !ok || len(np.IPs) != 1 || np.MTU != 1442 || np.MACAddress == "" {
		t.Fatalf("annotation %+v", np)
	}
	port := e.fake.Get("ports", np.PortID)
	if port["binding:host_id"] != "n1" || port["port_security_enabled"] != false || port["device_owner"] != DeviceOwner {
		t.Errorf("port %v", port)
	}
	// The pod subnet is in the pool: one route covers both.
	want := []kuryrv1.Route{{Destination: "10.10.0.0/16", Gateway: "10.11.0.1"}}
	if len(np.Routes) != 1 || np.Routes[0] != want[0] {
		t.Errorf("routes %v, want %v", np.Routes, want)
	}
	writes := e.fake.Writes()
	e.reconcile(t, "n1")
	if e.fake.Writes() != writes {
		t.Errorf("a second reconcile wrote to Neutron: %v", e.fake.Requests)
	}
}

// A create that went unanswered is found by its tags, not made again.
func TestNodePortUnclearCreateAdopted(t *testing.T) {
	e := newEnv(t, node("n1"))
	e.fake.Unanswered = func(method, coll string) (int, string) {
		if method == "POST" {
			return 504, "timeout"
		}
		return 0, ""
	}
	if _, err := e.r.Reconcile(context.Background(), ctrl.Request{NamespacedName: types.NamespacedName{Name: "n1"}}); err == nil {
		t.Fatal("want the error")
	}
	e.fake.Unanswered = nil
	e.reconcile(t, "n1")
	if np, ok := e.annotation(t, "n1"); !ok || e.fake.Count("ports") != 1 || e.fake.Requests["POST ports"] != 1 {
		t.Errorf("annotation %v, %d ports, %d creates", np, e.fake.Count("ports"), e.fake.Requests["POST ports"])
	}
}

func TestRemovedNodeLosesItsPort(t *testing.T) {
	e := newEnv(t, node("n1"))
	e.reconcile(t, "n1")
	if err := e.r.Delete(context.Background(), node("n1")); err != nil {
		t.Fatal(err)
	}
	e.reconcile(t, "n1")
	if e.fake.Count("ports") != 0 {
		t.Errorf("%d ports left", e.fake.Count("ports"))
	}
}

func TestNodePortsOff(t *testing.T) {
	e := newEnv(t, node("n1"))
	e.reconcile(t, "n1")
	e.r.Settings.Subnet = ""
	e.reconcile(t, "n1")
	if _, ok := e.annotation(t, "n1"); ok || e.fake.Count("ports") != 0 {
		t.Errorf("node ports off: annotation left %v, %d ports", ok, e.fake.Count("ports"))
	}
}

// A create that made nothing is not repeated before the settle time.
func TestNodePortUnclearCreateWaits(t *testing.T) {
	e := newEnv(t, node("n1"))
	e.fake.Fail = func(method, coll string) (int, string) {
		if method == "POST" {
			return 503, "unavailable"
		}
		return 0, ""
	}
	if _, err := e.r.Reconcile(context.Background(), ctrl.Request{NamespacedName: types.NamespacedName{Name: "n1"}}); err == nil {
		t.Fatal("want the error")
	}
	e.fake.Fail = nil
	if res := e.reconcile(t, "n1"); res.RequeueAfter == 0 || e.fake.Count("ports") != 0 {
		t.Fatalf("created again at once: %+v, %d ports", res, e.fake.Count("ports"))
	}
	e.r.unclear.Now = func() time.Time { return time.Now().Add(openstack.UnclearSettle) } // the settle time is over
	e.reconcile(t, "n1")
	if _, ok := e.annotation(t, "n1"); !ok || e.fake.Count("ports") != 1 {
		t.Errorf("not created after the settle time: %d ports", e.fake.Count("ports"))
	}
}

// A port deleted behind kuryr's back is replaced when it is checked: one
// listing of the nodes' ports, then every node reconciled (its routes
// refreshed), reading by id only the port the listing did not show.
func TestNodePortDeletedIsReplaced(t *testing.T) {
	e := newEnv(t, node("n1"), node("n2"))
	e.reconcile(t, "n1")
	if res := e.reconcile(t, "n2"); res.RequeueAfter != 0 {
		t.Errorf("requeue %+v: the ports are checked by one listing, not a requeue per node", res)
	}
	np, _ := e.annotation(t, "n1")
	if err := e.r.Neutron.DeletePort(context.Background(), np.PortID); err != nil {
		t.Fatal(err)
	}
	nets, err := e.r.Settings.Networks(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	e.r.Settings.Networks = func(context.Context) (clusternet.Networks, error) { return nets, nil } // only the ports counted
	gets := e.fake.Requests["GET ports"]
	e.verify(t, nil)
	e.reconcile(t, "n2")
	if got := e.fake.Requests["GET ports"] - gets; got != 1 {
		t.Errorf("%d port reads to list the ports and reconcile n2, want 1 (the listing)", got)
	}
	e.reconcile(t, "n1")
	if got, ok := e.annotation(t, "n1"); !ok || got.PortID == np.PortID || e.fake.Get("ports", got.PortID) == nil {
		t.Errorf("annotation %+v after its port was deleted", got)
	}

	// The listing fails: every node reads its own port.
	gets = e.fake.Requests["GET ports"]
	e.fake.Fail = func(method, collection string) (int, string) {
		if method == "GET" && collection == "ports" && e.fake.Requests["GET ports"] == gets+1 {
			return 503, "{}"
		}
		return 0, ""
	}
	e.verify(t, errors.New("503"))
	e.reconcile(t, "n2")
	if got := e.fake.Requests["GET ports"] - gets; got != 2 {
		t.Errorf("%d port reads after a failed listing and n2's reconcile, want 2 (the listing, n2's port by id)", got)
	}
}

// verify runs a verification round, checks its error (nil or not), and
// returns the nodes it enqueued.
func (e *env) verify(t *testing.T, wantErr error) []string {
	t.Helper()
	q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
	defer q.ShutDown()
	if err := e.r.verify(context.Background(), q); (err != nil) != (wantErr != nil) {
		t.Fatalf("verify: %v", err)
	}
	var out []string
	for q.Len() > 0 {
		req, _ := q.Get()
		q.Done(req)
		out = append(out, req.Name)
	}
	slices.Sort(out)
	if !slices.Equal(out, []string{"n1", "n2"}) {
		t.Fatalf("enqueued %v, want every node", out)
	}
	return out
}

// The node routes every subnet of its router through its port (VMs'
// networks too: it answers them on the way they came), not its own, not
// one a pool covers, and not one holding the node's own address (left out
// with a Warning, the other routes kept).
func TestNodeRoutesTheRoutersSubnets(t *testing.T) {
	n := node("n1")
	n.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "192.168.7.11"}}
	e := newEnv(t, n)
	vms := e.fake.Add("subnets", neutrontest.Object{"network_id": "vm-net", "cidr": "10.20.0.0/24"})
	underlay := e.fake.Add("subnets", neutrontest.Object{"network_id": "clash", "cidr": "192.168.7.0/24"})
	for _, s := range []string{e.r.Settings.Subnet, vms, underlay} {
		if err := e.r.Neutron.(*neutron.Client).EnsureRouterInterface(context.Background(), "router", s); err != nil {
			t.Fatal(err)
		}
	}
	e.reconcile(t, "n1")
	np, _ := e.annotation(t, "n1")
	var got []string
	for _, r := range np.Routes {
		got = append(got, r.Destination)
	}
	if want := []string{"10.10.0.0/16", "10.20.0.0/24"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("routes %v, want %v", got, want)
	}
}

// TestVMNodeGetsNoPort: a node labelled nested gets no management port
// (its pods sit on its VM's port), nor a pool if nested-macvlan, and each
// is said once by a
// Warning Event rather than the option being ignored silently.
func TestVMNodeGetsNoPort(t *testing.T) {
	// A nested-vlan node's pool is of subports: only a nested-macvlan one
	// is said to have none.
	for mode, want := range map[string]int{"nested-macvlan": 2, "nested-vlan": 1} {
		vm := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "vm-1",
			Labels: map[string]string{kuryrv1.PodVIFLabel: mode}}}
		e := newEnv(t, vm)
		events := &kittest.Events{}
		e.r.Recorder, e.r.Settings.Pools = events, true
		e.reconcile(t, "vm-1")
		e.reconcile(t, "vm-1") // a resync: said once
		if _, ok := e.annotation(t, "vm-1"); ok || e.fake.Count("ports") != 0 {
			t.Errorf("%s: a VM node got a management port (%d ports)", mode, e.fake.Count("ports"))
		}
		if notes := events.Notes("NotOnVMNode"); len(notes) != want {
			t.Errorf("%s: events %v, want %d NotOnVMNode (management port, and pool for macvlan)", mode, events, want)
		}
	}
}

// A removed node's port Neutron is still creating (an unanswered create's,
// not bound yet) is left to the sweep; its finished ones are deleted.
func TestRemovedNodeSparesAPortStillBeingCreated(t *testing.T) {
	e := newEnv(t, node("n1"))
	e.r.Settings.BindTimeout = time.Minute
	e.reconcile(t, "n1")
	np, _ := e.annotation(t, "n1")
	late := e.fake.Add("ports", neutrontest.Object{"tags": e.fake.Get("ports", np.PortID)["tags"],
		"binding:host_id": "n1", "binding:vif_type": "unbound", "created_at": time.Now().UTC().Format("2006-01-02T15:04:05Z")})
	if err := e.r.Delete(context.Background(), node("n1")); err != nil {
		t.Fatal(err)
	}
	e.reconcile(t, "n1")
	if e.fake.Get("ports", np.PortID) != nil || e.fake.Get("ports", late) == nil {
		t.Errorf("node port left: %v; port still being created deleted: %v", e.fake.Get("ports", np.PortID) != nil,
			e.fake.Get("ports", late) == nil)
	}
}
