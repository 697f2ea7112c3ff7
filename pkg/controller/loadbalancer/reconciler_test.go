package loadbalancer

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	corev1 "k8s.io/api/core/v1"
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
	"github.com/kuryr-k8s/kuryr/pkg/neutron"
	"github.com/kuryr-k8s/kuryr/pkg/octavia"
	"github.com/kuryr-k8s/kuryr/pkg/octavia/octaviatest"
)

// fips is an in-memory floating IP service.
type fips struct {
	mu  sync.Mutex
	seq int
	all map[string]*neutron.FloatingIP
	// adminOnly: choosing an address is refused (Neutron's default policy).
	adminOnly bool
	// subnet is the subnet each floating IP was allocated on, by id.
	subnet map[string]string
}

func (f *fips) ListFloatingIPs(_ context.Context, q neutron.FloatingIPFilter) ([]neutron.FloatingIP, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []neutron.FloatingIP
	for _, ip := range f.all {
		if (q.PortID == "" || ip.PortID == q.PortID) && (q.Address == "" || ip.Address == q.Address) &&
			(q.Description == "" || ip.Description == q.Description) &&
			strings.Contains(strings.Join(ip.Tags, ","), strings.Join(q.Tags, ",")) {
			out = append(out, *ip)
		}
	}
	return out, nil
}

func (f *fips) CreateFloatingIP(_ context.Context, spec neutron.FloatingIPSpec) (*neutron.FloatingIP, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if spec.Address != "" && f.adminOnly {
		return nil, gophercloud.ErrUnexpectedResponseCode{Actual: 403, Body: []byte("policy")}
	}
	f.seq++
	addr := spec.Address
	if addr == "" {
		addr = fmt.Sprintf("172.24.4.%d", 100+f.seq)
		if strings.HasSuffix(spec.Subnet, "-b") { // see external
			addr = fmt.Sprintf("172.24.5.%d", 100+f.seq)
		}
	}
	for _, ip := range f.all {
		if ip.Address == addr {
			return nil, gophercloud.ErrUnexpectedResponseCode{Actual: 409, Body: []byte("in use")}
		}
	}
	ip := &neutron.FloatingIP{ID: fmt.Sprintf("fip-%d", f.seq), Address: addr, PortID: spec.Port,
		NetworkID: spec.Network, Description: spec.Description, Tags: spec.Tags}
	f.all[ip.ID] = ip
	if f.subnet == nil {
		f.subnet = map[string]string{}
	}
	f.subnet[ip.ID] = spec.Subnet
	return ip, nil
}

func (f *fips) HandOverFloatingIP(_ context.Context, id string, tags []string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.all[id].Tags, f.all[id].Description = tags, ""
	return nil
}

// external is the external network of the tests: public, 172.24.4.0/24;
// any other network has two subnets, ID-a and ID-b (named "a" and "b"),
// 172.24.4.0/24 and 172.24.5.0/24.
type external struct{}

func (external) Network(_ context.Context, id string) (*neutron.Network, error) {
	n := &neutron.Network{}
	n.ID, n.Subnets = id, []string{"public-subnet"}
	if id != "public" {
		n.Subnets = []string{id + "-a", id + "-b"}
	}
	if id == "stale" { // lists a subnet deleted since
		n.Subnets = []string{"stale-gone", "stale-b"}
	}
	return n, nil
}

func (external) ForgetNetwork(string) {}

func (external) Subnet(_ context.Context, id string) (*neutron.Subnet, error) {
	if strings.HasSuffix(id, "-gone") {
		return nil, gophercloud.ErrUnexpectedResponseCode{Actual: http.StatusNotFound}
	}
	name, cidr, tags := id[strings.LastIndex(id, "-")+1:], "172.24.4.0/24", []string(nil)
	if name == "b" {
		cidr, tags = "172.24.5.0/24", []string{"blue"}
	}
	return &neutron.Subnet{ID: id, Name: name, CIDR: cidr, Tags: tags}, nil
}

func (f *fips) AssociateFloatingIP(_ context.Context, id, port string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.all[id].PortID = port
	return nil
}

func (f *fips) DeleteFloatingIP(_ context.Context, id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.all, id)
	return nil
}

type env struct {
	r   *Reconciler
	oct *octaviatest.Fake
	fip *fips
	cl  client.Client
}

const svcUID = "11111111-2222-3333-4444-555555555555"

func members(ips ...string) []kuryrv1.LoadBalancerMember {
	var out []kuryrv1.LoadBalancerMember
	for _, ip := range ips {
		out = append(out, kuryrv1.LoadBalancerMember{IP: ip, Port: 8080, SubnetID: "pod-subnet"})
	}
	return out
}

func newEnv(t *testing.T, typ string) *env {
	t.Helper()
	s := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(s)
	_ = kuryrv1.AddToScheme(s)
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: "web", UID: svcUID}}
	klb := &kuryrv1.KuryrLoadBalancer{ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: "web",
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Service", Name: "web", UID: svcUID, Controller: ptrTrue()}}},
		Spec: kuryrv1.KuryrLoadBalancerSpec{IP: "10.0.0.20", Type: typ, Provider: "ovn", Algorithm: "SOURCE_IP_PORT",
			SubnetID: "svc-subnet", ProjectID: "p", Ports: []kuryrv1.LoadBalancerPort{
				{Name: "http", Protocol: "TCP", Port: 80, Members: members("10.10.0.4", "10.10.0.5", "10.10.0.6")},
				{Name: "dns", Protocol: "UDP", Port: 80, Members: members("10.10.0.4", "10.10.0.5", "10.10.0.6")}}}}
	cl := fake.NewClientBuilder().WithScheme(s).WithObjects(svc, klb).
		WithStatusSubresource(&kuryrv1.KuryrLoadBalancer{}, &corev1.Service{}).Build()
	oct := octaviatest.New(t)
	f := &fips{all: map[string]*neutron.FloatingIP{}}
	return &env{oct: oct, fip: f, cl: cl, r: &Reconciler{Client: cl, Octavia: octavia.New(oct.Client(t)), Neutron: f,
		Info: external{}, Recorder: kittest.None{}, Settings: Settings{Cluster: "c1", ExternalNetwork: "public"}}}
}

func ptrTrue() *bool { b := true; return &b }

// converge reconciles until the reconciler has nothing left to do.
func (e *env) converge(t *testing.T) {
	t.Helper()
	for i := 0; i < 30; i++ {
		res, err := e.r.Reconcile(context.Background(), ctrl.Request{NamespacedName: types.NamespacedName{Namespace: "demo", Name: "web"}})
		if err != nil {
			t.Logf("reconcile %d: %v", i, err)
			continue
		}
		if res.IsZero() || res.RequeueAfter >= notServedRecheck {
			return
		}
	}
	t.Fatal("did not converge in 30 reconciles")
}

func (e *env) klb(t *testing.T) *kuryrv1.KuryrLoadBalancer {
	t.Helper()
	var klb kuryrv1.KuryrLoadBalancer
	if err := e.cl.Get(context.Background(), client.ObjectKey{Namespace: "demo", Name: "web"}, &klb); err != nil {
		t.Fatal(err)
	}
	return &klb
}

func TestWholeLoadBalancerInOneWrite(t *testing.T) {
	e := newEnv(t, "ClusterIP")
	e.converge(t)
	klb := e.klb(t)
	if !meta.IsStatusConditionTrue(klb.Status.Conditions, kuryrv1.ConditionReady) || klb.Status.Members != 6 || len(klb.Status.Listeners) != 2 {
		t.Fatalf("status %+v", klb.Status)
	}
	if w := e.oct.Writes(); w != 1 {
		t.Fatalf("%d Octavia writes (%v), want 1 fully populated create", w, e.oct.Requests)
	}
	if !strings.Contains(strings.Join(klb.Finalizers, ","), kuryrv1.KuryrLoadBalancerFinalizer) {
		t.Fatalf("finalizers %v", klb.Finalizers)
	}
}

func TestRestartAdoptsWithoutWrites(t *testing.T) {
	e := newEnv(t, "ClusterIP")
	e.converge(t)
	// A new controller, and a status lost: found by its tags.
	klb := e.klb(t)
	orig := klb.DeepCopy()
	klb.Status = kuryrv1.KuryrLoadBalancerStatus{}
	if err := e.cl.Status().Patch(context.Background(), klb, client.MergeFrom(orig)); err != nil {
		t.Fatal(err)
	}
	before := e.oct.Writes()
	e.r = &Reconciler{Client: e.cl, Octavia: e.r.Octavia, Neutron: e.fip, Info: external{}, Recorder: kittest.None{}, Settings: e.r.Settings}
	e.converge(t)
	if w := e.oct.Writes() - before; w != 0 {
		t.Fatalf("%d Octavia writes after the restart, want 0", w)
	}
	if got := e.klb(t).Status; got.LoadBalancer == nil || got.Members != 6 {
		t.Fatalf("status not rebuilt: %+v", got)
	}
}

// TestMemberChanges: a pool changed by many members gets one batch, by
// one member one single-member call; either way one Octavia write.
func TestMemberChanges(t *testing.T) {
	for _, tc := range []struct {
		name    string
		ips     []string
		request string
	}{
		{"many: one batch", []string{"10.10.0.4", "10.10.0.7"}, "PUT members"},
		{"one gone: one member delete", []string{"10.10.0.4", "10.10.0.5"}, "DELETE members"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, "ClusterIP")
			e.converge(t)
			klb := e.klb(t)
			klb.Spec.Ports[0].Members = members(tc.ips...)
			if err := e.cl.Update(context.Background(), klb); err != nil {
				t.Fatal(err)
			}
			before := e.oct.Writes()
			e.converge(t)
			if w, n := e.oct.Writes()-before, e.oct.Requests[tc.request]; w != 1 || n != 1 {
				t.Fatalf("%d writes, %d %q; want 1 and 1 (%v)", w, n, tc.request, e.oct.Requests)
			}
			if got := e.klb(t).Status.Members; got != 3+len(tc.ips) {
				t.Fatalf("members %d, want %d", got, 3+len(tc.ips))
			}
		})
	}
}

// TestLostMemberReplacesPool: the ovn provider answers the delete of a
// member it lost and leaves the member in ERROR, every time; after
// maxRepeats deletes the reconciler replaces the pool, which removes it.
func TestLostMemberReplacesPool(t *testing.T) {
	e := newEnv(t, "ClusterIP")
	e.converge(t)
	ctx := context.Background()
	pools, err := e.r.Octavia.Pools(ctx, e.klb(t).Status.LoadBalancer.ID)
	if err != nil {
		t.Fatal(err)
	}
	var poolID, lost string
	for _, p := range pools {
		ms, err := e.r.Octavia.Members(ctx, p.ID)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range ms {
			if p.Protocol == "TCP" && m.Address == "10.10.0.6" {
				poolID, lost = p.ID, m.ID
			}
		}
	}
	e.oct.LoseMember(lost)
	klb := e.klb(t)
	klb.Spec.Ports[0].Members = members("10.10.0.4", "10.10.0.5")
	if err := e.cl.Update(ctx, klb); err != nil {
		t.Fatal(err)
	}
	e.converge(t)
	if d := e.oct.Requests["DELETE members"]; d != maxRepeats-1 {
		t.Errorf("%d member deletes, want %d before the pool is replaced", d, maxRepeats-1)
	}
	if e.oct.Get(octaviatest.Members, lost) != nil || e.oct.Get(octaviatest.Pools, poolID) != nil {
		t.Fatalf("the lost member or its pool is still there")
	}
	got := e.klb(t).Status
	if !meta.IsStatusConditionTrue(got.Conditions, kuryrv1.ConditionReady) || got.Members != 5 {
		t.Fatalf("status %+v, want Ready with 5 members", got)
	}
}

// TestStuckPoolReplacesLoadBalancer: a pool left PENDING_UPDATE under an
// ACTIVE load balancer (its provider's status lost) is waited for
// stuckGrace, then the load balancer is replaced.
func TestStuckPoolReplacesLoadBalancer(t *testing.T) {
	e, clock, old := stuckPool(t, "PENDING_UPDATE")
	now := *clock
	e.r.progress.now = func() time.Time { return now }
	klb := e.klb(t)
	klb.Spec.Ports[0].Members = members("10.10.0.4", "10.10.0.5")
	if err := e.cl.Update(context.Background(), klb); err != nil {
		t.Fatal(err)
	}
	req := ctrl.Request{NamespacedName: types.NamespacedName{Namespace: "demo", Name: "web"}}
	for i := 0; i < 3; i++ {
		res, err := e.r.Reconcile(context.Background(), req)
		if err != nil || res.RequeueAfter != stuckGrace/6 {
			t.Fatalf("reconcile %d within the grace: %v, %+v; want a wait of %s", i, err, res, stuckGrace/6)
		}
		now = now.Add(stuckGrace / 4)
	}
	if e.oct.Get(octaviatest.LoadBalancers, old) == nil {
		t.Fatal("replaced within the grace")
	}
	now = now.Add(stuckGrace)
	e.converge(t)
	got := e.klb(t).Status
	if got.LoadBalancer == nil || got.LoadBalancer.ID == old || len(e.oct.List(octaviatest.LoadBalancers)) != 1 || got.Members != 5 {
		t.Fatalf("status %+v, %d load balancers; want a new one only, with 5 members", got, len(e.oct.List(octaviatest.LoadBalancers)))
	}
}

func TestPortChangeReplacesListener(t *testing.T) {
	e := newEnv(t, "ClusterIP")
	e.converge(t)
	klb := e.klb(t)
	klb.Spec.Ports[1] = kuryrv1.LoadBalancerPort{Name: "dns", Protocol: "UDP", Port: 53, Members: members("10.10.0.4")}
	if err := e.cl.Update(context.Background(), klb); err != nil {
		t.Fatal(err)
	}
	e.converge(t)
	got := e.klb(t).Status
	ports := map[string]int{}
	for _, l := range got.Listeners {
		ports[fmt.Sprintf("%s/%d", l.Protocol, l.Port)] = l.Members
	}
	if len(ports) != 2 || ports["TCP/80"] != 3 || ports["UDP/53"] != 1 {
		t.Fatalf("listeners %+v", got.Listeners)
	}
}

func TestUnansweredCreateIsNotDuplicated(t *testing.T) {
	e := newEnv(t, "ClusterIP")
	once := true
	e.oct.Unanswered = func(method, coll string) (int, string) {
		if method == "POST" && coll == octaviatest.LoadBalancers && once {
			once = false
			return 504, "gateway timeout"
		}
		return 0, ""
	}
	e.converge(t)
	if n := len(e.oct.List(octaviatest.LoadBalancers)); n != 1 {
		t.Fatalf("%d load balancers, want 1", n)
	}
	if p := e.oct.Requests["POST loadbalancers"]; p != 1 {
		t.Fatalf("%d creates, want 1 (the unanswered one was found)", p)
	}
}

func TestErrorLoadBalancerIsReplaced(t *testing.T) {
	e := newEnv(t, "ClusterIP")
	e.converge(t)
	id := e.klb(t).Status.LoadBalancer.ID
	e.oct.Update(octaviatest.LoadBalancers, id, octaviatest.Object{"provisioning_status": "ERROR"})
	e.converge(t)
	got := e.klb(t).Status.LoadBalancer
	if got == nil || got.ID == id || len(e.oct.List(octaviatest.LoadBalancers)) != 1 {
		t.Fatalf("load balancer %+v, %d in Octavia; want a new one only", got, len(e.oct.List(octaviatest.LoadBalancers)))
	}
}

func TestLoadBalancerServiceGetsFloatingIP(t *testing.T) {
	e := newEnv(t, "LoadBalancer")
	e.converge(t)
	st := e.klb(t).Status
	if st.FloatingIP == nil || st.FloatingIP.AllocMethod != allocPool {
		t.Fatalf("floating IP %+v", st.FloatingIP)
	}
	var svc corev1.Service
	if err := e.cl.Get(context.Background(), client.ObjectKey{Namespace: "demo", Name: "web"}, &svc); err != nil {
		t.Fatal(err)
	}
	if in := svc.Status.LoadBalancer.Ingress; len(in) != 1 || in[0].IP != st.FloatingIP.IP {
		t.Fatalf("ingress %+v, want %s", in, st.FloatingIP.IP)
	}
	// Deleted: load balancer and floating IP go, then the finalizer.
	klb := e.klb(t)
	if err := e.cl.Delete(context.Background(), klb); err != nil {
		t.Fatal(err)
	}
	e.converge(t)
	if n, f := len(e.oct.List(octaviatest.LoadBalancers)), len(e.fip.all); n != 0 || f != 0 {
		t.Fatalf("%d load balancers, %d floating IPs left", n, f)
	}
	var gone kuryrv1.KuryrLoadBalancer
	if err := e.cl.Get(context.Background(), client.ObjectKey{Namespace: "demo", Name: "web"}, &gone); err == nil {
		t.Fatalf("KuryrLoadBalancer still there: %v", gone.Finalizers)
	}
}

func (e *env) setType(t *testing.T, typ string) {
	t.Helper()
	e.mutateSpec(t, func(s *kuryrv1.KuryrLoadBalancerSpec) { s.Type = typ })
}

// mutateSpec changes the KuryrLoadBalancer's spec as the Service
// reconciler would.
func (e *env) mutateSpec(t *testing.T, mut func(*kuryrv1.KuryrLoadBalancerSpec)) {
	t.Helper()
	klb := e.klb(t)
	mut(&klb.Spec)
	if err := e.cl.Update(context.Background(), klb); err != nil {
		t.Fatal(err)
	}
}

func (e *env) ingress(t *testing.T) []corev1.LoadBalancerIngress {
	t.Helper()
	var svc corev1.Service
	if err := e.cl.Get(context.Background(), client.ObjectKey{Namespace: "demo", Name: "web"}, &svc); err != nil {
		t.Fatal(err)
	}
	return svc.Status.LoadBalancer.Ingress
}

// A LoadBalancer Service turned ClusterIP gives its floating IP back, even
// one whose tagging failed, and kuryr's ingress goes.
func TestTypeChangeReleasesFloatingIP(t *testing.T) {
	e := newEnv(t, "LoadBalancer")
	e.converge(t)
	for _, f := range e.fip.all {
		f.Tags = nil // as if tagging had failed after the create
	}
	e.setType(t, "ClusterIP")
	e.converge(t)
	if len(e.fip.all) != 0 || len(e.ingress(t)) != 0 || e.klb(t).Status.FloatingIP != nil {
		t.Fatalf("floating IPs %v, ingress %v", e.fip.all, e.ingress(t))
	}
}

// Ingress another controller wrote (a foreign loadBalancerClass: kuryr
// serves the ClusterIP only) is left alone.
func TestForeignIngressLeftAlone(t *testing.T) {
	e := newEnv(t, "ClusterIP")
	var svc corev1.Service
	if err := e.cl.Get(context.Background(), client.ObjectKey{Namespace: "demo", Name: "web"}, &svc); err != nil {
		t.Fatal(err)
	}
	svc.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "192.0.2.7"}}
	if err := e.cl.Status().Update(context.Background(), &svc); err != nil {
		t.Fatal(err)
	}
	e.converge(t)
	if err := e.cl.Delete(context.Background(), e.klb(t)); err != nil {
		t.Fatal(err)
	}
	e.converge(t)
	if in := e.ingress(t); len(in) != 1 || in[0].IP != "192.0.2.7" {
		t.Fatalf("ingress %v, want the other controller's", in)
	}
}

// TestConcurrentReconciles: workers reconcile several Services at once and
// share the reconciler; none may write a field the others read (run with
// -race).
func TestConcurrentReconciles(t *testing.T) {
	e := newEnv(t, "ClusterIP")
	e.r.Settings.CreateSettle = 7 * time.Second
	names := []string{"web"}
	for i := 0; i < 7; i++ {
		k := e.klb(t).DeepCopy()
		name, uid := fmt.Sprintf("api-%d", i), types.UID(fmt.Sprintf("api-uid-%d", i))
		k.ObjectMeta = metav1.ObjectMeta{Namespace: "demo", Name: name,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Service", Name: name, UID: uid, Controller: ptrTrue()}}}
		k.Spec.IP = fmt.Sprintf("10.0.0.%d", 30+i)
		if err := e.cl.Create(context.Background(), k); err != nil {
			t.Fatal(err)
		}
		names = append(names, name)
	}
	var wg sync.WaitGroup
	start := make(chan struct{})
	for _, name := range names {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			for i := 0; i < 3; i++ {
				_, _ = e.r.Reconcile(context.Background(), ctrl.Request{NamespacedName: types.NamespacedName{Namespace: "demo", Name: name}})
			}
		}()
	}
	close(start)
	wg.Wait()
	if got := e.r.creates().Settle; got != 7*time.Second {
		t.Fatalf("settle %v, want the configured 7s", got)
	}
}

// TestStuckPoolWaitsWhileProviderWorks: a pool PENDING_* under an ACTIVE
// load balancer is not taken for lost while other load balancers keep
// settling (the provider works through a burst one request at a time);
// it is once the provider has been idle stuckGrace, and after stuckMax
// whatever the others do.
func TestStuckPoolWaitsWhileProviderWorks(t *testing.T) {
	for _, busyAll := range []bool{false, true} {
		e, clock, old := stuckPool(t, "PENDING_CREATE")
		now := *clock
		e.r.progress.now = func() time.Time { return now }
		req := ctrl.Request{NamespacedName: types.NamespacedName{Namespace: "demo", Name: "web"}}
		other := func() { // another Service's load balancer settles
			e.r.progress.pending("other")
			e.r.progress.settle("other")
		}
		for elapsed := time.Duration(0); elapsed < 3*stuckGrace || (busyAll && elapsed < stuckMax); elapsed += stuckGrace / 4 {
			other()
			if _, err := e.r.Reconcile(context.Background(), req); err != nil {
				t.Fatal(err)
			}
			if e.oct.Get(octaviatest.LoadBalancers, old) == nil {
				t.Fatalf("replaced %s after the pool was pending, while others kept settling", elapsed)
			}
			now = now.Add(stuckGrace / 4)
		}
		if !busyAll {
			now = now.Add(stuckGrace) // the provider idle
		}
		if _, err := e.r.Reconcile(context.Background(), req); err != nil {
			t.Fatal(err)
		}
		if e.oct.Get(octaviatest.LoadBalancers, old) != nil {
			t.Fatalf("busy %v: not replaced", busyAll)
		}
	}
}

// TestReplacedLoadBalancerComingBackIsNotAdopted: a load balancer kuryr
// deleted to replace it that Octavia shows ACTIVE again (the provider
// failed the delete half way) is deleted again, not adopted, also by a
// restarted controller (the status remembers it).
func TestReplacedLoadBalancerComingBackIsNotAdopted(t *testing.T) {
	e := newEnv(t, "ClusterIP")
	e.converge(t)
	klb := e.klb(t)
	lb, err := e.r.Octavia.GetLoadBalancer(context.Background(), klb.Status.LoadBalancer.ID)
	if err != nil || lb == nil {
		t.Fatal(lb, err)
	}
	orig := klb.DeepCopy()
	forgetLB(klb, lb.ID) // as replace() does after its delete
	if err := e.cl.Status().Patch(context.Background(), klb, client.MergeFrom(orig)); err != nil {
		t.Fatal(err)
	}
	e.r = &Reconciler{Client: e.cl, Octavia: e.r.Octavia, Neutron: e.fip, Info: external{}, Recorder: kittest.None{}, Settings: e.r.Settings}
	before := e.oct.Requests["DELETE loadbalancers"]
	e.converge(t)
	if n := e.oct.Requests["DELETE loadbalancers"] - before; n != 1 {
		t.Fatalf("%d deletes of the load balancer that came back, want 1", n)
	}
	got := e.klb(t).Status
	if got.LoadBalancer == nil || got.LoadBalancer.ID == lb.ID || !meta.IsStatusConditionTrue(got.Conditions, kuryrv1.ConditionReady) {
		t.Fatalf("status %+v, want Ready on a new load balancer", got)
	}
}

// TestProviderProgressSignals: what counts as the provider working — a
// load balancer settling, another child of a load balancer becoming the
// pending one (the previous settled), a deleted load balancer gone — and
// restarts the stuck count of that load balancer where it applies.
func TestProviderProgressSignals(t *testing.T) {
	now := time.Now()
	p := &progress{now: func() time.Time { return now }}
	p.idle() // starts counting
	if d, _ := p.stuck("a", "pool 1 is PENDING_CREATE"); d != 0 {
		t.Fatalf("first look: %s", d)
	}
	now = now.Add(50 * time.Second)
	if d, _ := p.stuck("a", "pool 1 is PENDING_CREATE"); d != 50*time.Second || p.idle() != 50*time.Second {
		t.Fatalf("same child: stuck %s, idle %s", d, p.idle())
	}
	now = now.Add(time.Second)
	if d, total := p.stuck("a", "pool 2 is PENDING_CREATE"); d != 0 || p.idle() != 0 || total != 51*time.Second {
		t.Fatalf("next child pending: stuck %s, idle %s; want both restarted", d, p.idle())
	}
	now = now.Add(time.Minute)
	p.deleted("b")
	p.deletedDone("b")
	if p.idle() != 0 {
		t.Fatalf("a delete finished: idle %s", p.idle())
	}
	now = now.Add(time.Minute)
	p.deletedDone("c") // never deleted: no progress
	if p.idle() != time.Minute {
		t.Fatalf("idle %s, want a minute", p.idle())
	}
}

// stuckPool is a converged env (its progress on a fake clock, returned)
// whose first pool Octavia then shows in status under its ACTIVE load
// balancer (old).
func stuckPool(t *testing.T, status string) (e *env, clock *time.Time, old string) {
	t.Helper()
	e = newEnv(t, "ClusterIP")
	now := time.Now()
	e.r.progress.now = func() time.Time { return now }
	e.converge(t)
	pool := e.oct.List(octaviatest.Pools)[0]["id"].(string)
	e.oct.Update(octaviatest.Pools, pool, octaviatest.Object{"provisioning_status": status})
	return e, &now, e.klb(t).Status.LoadBalancer.ID
}
