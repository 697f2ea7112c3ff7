package kuryrport

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	kuryrv1 "github.com/kuryr-k8s/kuryr/api/v1"
	"github.com/kuryr-k8s/kuryr/pkg/controller/kit/kittest"
	"github.com/kuryr-k8s/kuryr/pkg/names"
	"github.com/kuryr-k8s/kuryr/pkg/neutron"
	"github.com/kuryr-k8s/kuryr/pkg/neutron/neutrontest"
)

type env struct {
	r       *Reconciler
	fake    *neutrontest.Fake
	events  *kittest.Events
	subnet  string
	started bool
}

// started stands for a completed start-up.
type started struct{}

func (started) Completed() bool { return true }

func newEnv(t *testing.T, objs ...client.Object) *env {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := kuryrv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	fn := neutrontest.New(t)
	net := fn.Add("networks", neutrontest.Object{"name": "pods", "mtu": 1442})
	sub := fn.Add("subnets", neutrontest.Object{
		"network_id": net, "cidr": "10.10.0.0/24", "gateway_ip": "10.10.0.1", "ip_version": 4,
		"dns_nameservers": []string{"10.0.0.53"}, "host_routes": []neutrontest.Object{{"destination": "10.20.0.0/16", "nexthop": "10.10.0.254"}},
	})
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).WithStatusSubresource(&kuryrv1.KuryrPort{}).Build()
	nc := neutron.New(fn.Client(t))
	info := neutron.NewInfo(nc, time.Minute)
	ev := &kittest.Events{}
	r := &Reconciler{
		Client: c, Neutron: nc, Info: info, Ledger: NewLedger(), Recorder: ev, Started: started{},
		Target:   DefaultTarget(info, sub),
		Settings: Settings{Cluster: "c1", ProjectID: "p", SecurityGroups: []string{"sg"}, PortDebug: true, Bridge: "br-int"},
	}
	return &env{r: r, fake: fn, events: ev, subnet: sub}
}

func kp(name, uid string) *kuryrv1.KuryrPort {
	return &kuryrv1.KuryrPort{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", Finalizers: []string{kuryrv1.KuryrPortFinalizer}},
		Spec:       kuryrv1.KuryrPortSpec{PodUID: uid, PodNodeName: "node-a"},
	}
}

// target is the env's default target.
func (e *env) target(t *testing.T) Target {
	t.Helper()
	target, _, err := e.r.Target(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	return target
}

// start does what start-up does for the ledger: load the cluster's ports.
func (e *env) start(t *testing.T) []neutron.Port {
	t.Helper()
	ports, err := e.r.Neutron.(*neutron.Client).ListPorts(context.Background(), []string{names.ClusterTag("c1")}, "")
	if err != nil {
		t.Fatal(err)
	}
	e.r.Ledger.load(ports)
	e.started = true
	return ports
}

func (e *env) reconcile(t *testing.T, name string) error {
	t.Helper()
	_, err := e.reconcileResult(t, name)
	return err
}

func (e *env) reconcileResult(t *testing.T, name string) (ctrl.Result, error) {
	t.Helper()
	if !e.started {
		e.start(t)
	}
	return e.r.Reconcile(context.Background(), ctrl.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: name}})
}

func (e *env) get(t *testing.T, name string) *kuryrv1.KuryrPort {
	t.Helper()
	var got kuryrv1.KuryrPort
	if err := e.r.Get(context.Background(), types.NamespacedName{Namespace: "ns", Name: name}, &got); err != nil {
		t.Fatal(err)
	}
	return &got
}

func TestCreatesPortAndWritesStatus(t *testing.T) {
	e := newEnv(t, kp("web", "uid-1"))
	if err := e.reconcile(t, "web"); err != nil {
		t.Fatal(err)
	}
	vif, ok := e.get(t, "web").Status.DefaultVIF()
	if !ok {
		t.Fatal("no VIF in status")
	}
	port := e.fake.Get("ports", vif.PortID)
	if port["binding:host_id"] != "node-a" || port["name"] != "ns/web" || port["device_owner"] != DeviceOwner {
		t.Errorf("port %v", port)
	}
	if vif.Gateway != "10.10.0.1" || vif.MTU != 1442 || len(vif.IPs) != 1 || vif.IPs[0].Address[len(vif.IPs[0].Address)-3:] != "/24" ||
		len(vif.Routes) != 1 || len(vif.DNS) != 1 || vif.VIFName != kuryrv1.HostIfName(vif.PortID) {
		t.Errorf("vif %+v", vif)
	}
	if w := e.fake.Writes(); w != 1 {
		t.Errorf("Neutron writes = %d, want 1 (%v)", w, e.fake.Requests)
	}
}

func TestAdoptsPortCreatedBeforeACrash(t *testing.T) {
	e := newEnv(t, kp("web", "uid-1"))
	id := e.fake.Add("ports", neutrontest.Object{
		"network_id": "n", "mac_address": "fa:16:3e:00:00:01", "status": "ACTIVE", "binding:vif_type": "ovs",
		"fixed_ips": []neutrontest.Object{{"subnet_id": e.subnet, "ip_address": "10.10.0.7"}},
		"tags":      []string{names.ClusterTag("c1"), names.PodTag("uid-1")},
	})
	e.fake.Get("ports", id)["network_id"] = e.fake.Get("subnets", e.subnet)["network_id"]
	if err := e.reconcile(t, "web"); err != nil {
		t.Fatal(err)
	}
	got := e.get(t, "web")
	if v, _ := got.Status.DefaultVIF(); v.PortID != id || !v.Active {
		t.Errorf("status %+v, want adopted port %s", got.Status, id)
	}
	if c := meta.FindStatusCondition(got.Status.Conditions, kuryrv1.ConditionReady); c == nil || c.Reason != kuryrv1.ReasonAdopted {
		t.Errorf("condition %+v", c)
	}
	if w := e.fake.Writes(); w != 0 {
		t.Errorf("Neutron writes = %d, want 0", w)
	}
}

// A port listed while Neutron was still creating it has no binding yet; it
// is re-read, not written to the status as "unbound".
func TestAdoptsPortStillBeingBound(t *testing.T) {
	e := newEnv(t, kp("web", "uid-1"))
	id := e.fake.Add("ports", neutrontest.Object{
		"network_id": e.fake.Get("subnets", e.subnet)["network_id"], "mac_address": "fa:16:3e:00:00:01",
		"status": "DOWN", "binding:vif_type": "unbound",
		"fixed_ips": []neutrontest.Object{{"subnet_id": e.subnet, "ip_address": "10.10.0.7"}},
		"tags":      []string{names.ClusterTag("c1"), names.PodTag("uid-1")},
	})
	e.start(t)
	e.fake.Get("ports", id)["binding:vif_type"] = "ovs" // Neutron finished binding
	if err := e.reconcile(t, "web"); err != nil {
		t.Fatal(err)
	}
	if v, _ := e.get(t, "web").Status.DefaultVIF(); v.PortID != id || v.VIFType != "ovs" {
		t.Errorf("vif %+v", v)
	}
	if w := e.fake.Writes(); w != 0 {
		t.Errorf("Neutron writes = %d, want 0", w)
	}
}

func TestCompleteKuryrPortCostsNothing(t *testing.T) {
	e := newEnv(t, kp("web", "uid-1"))
	if err := e.reconcile(t, "web"); err != nil {
		t.Fatal(err)
	}
	before := fmt.Sprint(e.fake.Requests)
	if _, err := e.r.Reconcile(context.Background(), ctrl.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "web"}}); err != nil {
		t.Fatal(err)
	}
	if after := fmt.Sprint(e.fake.Requests); after != before {
		t.Errorf("a second reconcile called Neutron: %s -> %s", before, after)
	}
}

func TestSubnetFullIsVisibleAndRetried(t *testing.T) {
	e := newEnv(t, kp("web", "uid-1"))
	e.fake.Fail = func(method, coll string) (int, string) {
		if method == "POST" && coll == "ports" {
			return 409, `{"NeutronError": {"type": "IpAddressGenerationFailure", "message": "No more IP addresses available on network"}}`
		}
		return 0, ""
	}
	if err := e.reconcile(t, "web"); err == nil {
		t.Fatal("want an error so the work queue retries")
	}
	c := meta.FindStatusCondition(e.get(t, "web").Status.Conditions, kuryrv1.ConditionReady)
	if c == nil || c.Status != metav1.ConditionFalse || c.Reason != string(neutron.KindSubnetFull) {
		t.Errorf("condition %+v", c)
	}
	if len(e.events.Reasons()) != 1 || e.events.Reasons()[0] != string(neutron.KindSubnetFull) {
		t.Errorf("events %v", e.events.Reasons())
	}
	e.fake.Fail = nil
	if err := e.reconcile(t, "web"); err != nil {
		t.Fatalf("retry after the subnet has room: %v", err)
	}
	if _, ok := e.get(t, "web").Status.DefaultVIF(); !ok {
		t.Error("no port after the retry")
	}
}

func TestFinalizeDeletesPortAndReleases(t *testing.T) {
	e := newEnv(t, kp("web", "uid-1"))
	if err := e.reconcile(t, "web"); err != nil {
		t.Fatal(err)
	}
	if err := e.r.Delete(context.Background(), e.get(t, "web")); err != nil {
		t.Fatal(err)
	}
	if err := e.reconcile(t, "web"); err != nil {
		t.Fatal(err)
	}
	if n := e.fake.Count("ports"); n != 0 {
		t.Errorf("%d ports left", n)
	}
	var gone kuryrv1.KuryrPort
	err := e.r.Get(context.Background(), types.NamespacedName{Namespace: "ns", Name: "web"}, &gone)
	if err == nil {
		t.Errorf("KuryrPort still there with finalizers %v", gone.Finalizers)
	}
}

// A port Neutron could not bind (no chassis with the node's name) is
// replaced on the retry, and the reason is visible.
func TestBindingFailedIsReplacedAndVisible(t *testing.T) {
	e := newEnv(t, kp("web", "uid-1"))
	e.start(t)
	id := e.fake.Add("ports", neutrontest.Object{
		"network_id": "n", "status": "DOWN", "binding:vif_type": "binding_failed",
		"fixed_ips": []neutrontest.Object{{"subnet_id": e.subnet, "ip_address": "10.10.0.7"}},
		"tags":      []string{names.ClusterTag("c1"), names.PodTag("uid-1")},
	})
	p, _ := e.r.Neutron.(*neutron.Client).GetPort(context.Background(), id)
	e.r.Ledger.Record("uid-1", *p)
	if err := e.reconcile(t, "web"); err == nil {
		t.Fatal("want an error")
	}
	if e.fake.Get("ports", id) != nil {
		t.Error("the unbound port was not deleted")
	}
	if len(e.events.Reasons()) != 1 {
		t.Errorf("events %v", e.events.Reasons())
	}
	if err := e.reconcile(t, "web"); err != nil {
		t.Fatalf("retry: %v", err)
	}
	if v, ok := e.get(t, "web").Status.DefaultVIF(); !ok || v.PortID == id || v.VIFType != "ovs" {
		t.Errorf("after the retry: %+v", v)
	}
}

// A port Neutron committed but never bound (neutron-server died in the
// middle of creating it) is replaced once it is older than BindTimeout.
func TestNeverBoundPortIsReplaced(t *testing.T) {
	e := newEnv(t, kp("web", "uid-1"))
	e.r.Settings.BindTimeout = time.Minute
	stuck := func(age time.Duration) string {
		return e.fake.Add("ports", neutrontest.Object{
			"network_id": "n", "status": "DOWN", "binding:vif_type": "unbound",
			"created_at": time.Now().Add(-age).UTC().Format("2006-01-02T15:04:05Z"),
			"fixed_ips":  []neutrontest.Object{{"subnet_id": e.subnet, "ip_address": "10.10.0.7"}},
			"tags":       []string{names.ClusterTag("c1"), names.PodTag("uid-1")},
		})
	}
	young := stuck(time.Second)
	res, err := e.reconcileResult(t, "web")
	if err != nil || res.RequeueAfter == 0 || e.fake.Get("ports", young) == nil {
		t.Fatalf("a port being created was not waited for: %+v %v", res, err)
	}
	e.fake.Get("ports", young)["created_at"] = time.Now().Add(-2 * time.Minute).UTC().Format("2006-01-02T15:04:05Z")
	if err := e.reconcile(t, "web"); err == nil {
		t.Fatal("want the error that makes it visible")
	}
	if e.fake.Get("ports", young) != nil {
		t.Error("the never-bound port was not deleted")
	}
	if err := e.reconcile(t, "web"); err != nil {
		t.Fatal(err)
	}
	if v, ok := e.get(t, "web").Status.DefaultVIF(); !ok || v.PortID == young || v.VIFType != "ovs" {
		t.Errorf("after the retry: %+v", v)
	}
}

// A port given up whose delete fails, and which Neutron binds meanwhile
// (the delete was only slow: it commits later), is deleted on the retry,
// never handed to the pod.
func TestGivenUpPortIsNeverUsed(t *testing.T) {
	e := newEnv(t, kp("web", "uid-1"))
	e.r.Settings.BindTimeout = time.Minute
	id := e.fake.Add("ports", neutrontest.Object{
		"network_id": "n", "status": "DOWN", "binding:vif_type": "unbound",
		"created_at": time.Now().Add(-2 * time.Minute).UTC().Format("2006-01-02T15:04:05Z"),
		"fixed_ips":  []neutrontest.Object{{"subnet_id": e.subnet, "ip_address": "10.10.0.7"}},
		"tags":       []string{names.ClusterTag("c1"), names.PodTag("uid-1")},
	})
	e.fake.Fail = failOn("DELETE", "ports", 504)
	if err := e.reconcile(t, "web"); err == nil {
		t.Fatal("want the failed delete's error")
	}
	e.fake.Get("ports", id)["binding:vif_type"] = "ovs" // Neutron finished binding it
	e.fake.Fail = nil
	_ = e.reconcile(t, "web")
	if e.fake.Get("ports", id) != nil {
		t.Error("the given-up port was not deleted on the retry")
	}
	if v, ok := e.get(t, "web").Status.DefaultVIF(); ok && v.PortID == id {
		t.Fatalf("the given-up port was handed to the pod: %+v", v)
	}
	if err := e.reconcile(t, "web"); err != nil {
		t.Fatal(err)
	}
	if v, ok := e.get(t, "web").Status.DefaultVIF(); !ok || v.PortID == id {
		t.Errorf("after the retries: %+v", v)
	}
}

type oneGroup struct{}

func (oneGroup) Groups(context.Context, *kuryrv1.KuryrPort) ([]string, error) {
	return []string{"sg-1"}, nil
}

// flakyGroupPorts refuses the first fails writes (409: nothing done).
type flakyGroupPorts struct {
	fails, sets int
	groups      []string
	rev         int
}

func (f *flakyGroupPorts) SetPortSecurityGroups(_ context.Context, _ string, sgs []string, rev int) error {
	if f.fails > 0 {
		f.fails--
		return gophercloud.ErrUnexpectedResponseCode{Actual: 409}
	}
	if rev != f.rev {
		return gophercloud.ErrUnexpectedResponseCode{Actual: 412}
	}
	f.sets++
	f.groups, f.rev = sgs, f.rev+1
	return nil
}

func (f *flakyGroupPorts) PortSecurityGroups(context.Context, string) ([]string, int, error) {
	return f.groups, f.rev, nil
}

func (f *flakyGroupPorts) FencePort(context.Context, string, int) error {
	f.rev++
	return nil
}

// A group whose port update failed is applied on the retry (the status
// already names it, as a group the port may carry), then costs nothing.
func TestServiceGroupAppliedAfterAFailedUpdate(t *testing.T) {
	e := newEnv(t, kp("web", "uid-1"))
	if err := e.reconcile(t, "web"); err != nil {
		t.Fatal(err)
	}
	ports := &flakyGroupPorts{fails: 1}
	e.r.Groups, e.r.GroupPorts, e.r.Settings.SecurityGroups = oneGroup{}, ports, []string{"base"}
	if err := e.reconcile(t, "web"); err == nil {
		t.Fatal("want the failed update's error")
	}
	for i := 0; i < 2; i++ {
		if err := e.reconcile(t, "web"); err != nil {
			t.Fatal(err)
		}
	}
	st := e.get(t, "web").Status
	if ports.sets != 1 || !st.SecurityGroupsApplied || len(st.SecurityGroups) != 1 {
		t.Errorf("updates %d, status %v applied %v: want the group applied once", ports.sets, st.SecurityGroups, st.SecurityGroupsApplied)
	}
}

// A Neutron call cut short because the controller is stopping (its
// context cancelled) is left for the next leader: no Warning, no
// Ready=False.
func TestStoppingIsNotAFailure(t *testing.T) {
	e := newEnv(t, kp("web", "uid-1"))
	e.start(t)
	ctx, cancel := context.WithCancel(context.Background())
	e.fake.Fail = func(method, coll string) (int, string) {
		if method == "POST" && coll == "ports" {
			cancel()
			time.Sleep(100 * time.Millisecond) // the client gives up first
		}
		return 0, ""
	}
	_, err := e.r.Reconcile(ctx, ctrl.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "web"}})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("reconcile: %v, want the cancellation", err)
	}
	if len(e.events.Reasons()) != 0 {
		t.Errorf("events %v", e.events.Reasons())
	}
	if c := meta.FindStatusCondition(e.get(t, "web").Status.Conditions, kuryrv1.ConditionReady); c != nil && c.Status == metav1.ConditionFalse {
		t.Errorf("condition %+v", c)
	}
}
