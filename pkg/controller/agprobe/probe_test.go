package agprobe

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	kuryrv1 "github.com/kuryr-k8s/kuryr/api/v1"
	"github.com/kuryr-k8s/kuryr/pkg/controller/kit/kittest"
	"github.com/kuryr-k8s/kuryr/pkg/neutron"
	"github.com/kuryr-k8s/kuryr/pkg/neutron/neutrontest"
)

// dataplane stands for ML2/OVN between the controller's node and the
// probe port: a connection is reset while the probe's address group holds
// an address, or always where address groups are not enforced; else it
// times out. unplugged: the port never answers.
type dataplane struct {
	f                   *neutrontest.Fake
	enforced, unplugged bool
	// unreachable: once the group is empty, the host says no route.
	unreachable bool
	dials       int
}

func (d *dataplane) dial(_ context.Context, _ string, _ time.Duration) error {
	d.dials++
	if d.unplugged {
		return os.ErrDeadlineExceeded
	}
	held := false
	for _, id := range d.f.IDs("address-groups") {
		held = held || len(d.f.AddressGroupAddresses(id)) > 0
	}
	switch {
	case held || !d.enforced:
		return syscall.ECONNREFUSED
	case d.unreachable:
		return syscall.EHOSTUNREACH
	}
	return os.ErrDeadlineExceeded
}

func newProber(t *testing.T, d *dataplane) (*Prober, client.Client) {
	t.Helper()
	s := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(s)
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}
	cl := fake.NewClientBuilder().WithScheme(s).WithObjects(node).Build()
	d.f = neutrontest.New(t)
	net := d.f.Add("networks", neutrontest.Object{"mtu": 1450})
	sub := d.f.Add("subnets", neutrontest.Object{"network_id": net, "cidr": "10.10.0.0/24", "gateway_ip": "10.10.0.1"})
	nc := neutron.New(d.f.Client(t))
	p := &Prober{Client: cl, Neutron: nc, Info: neutron.NewInfo(nc, time.Minute), Recorder: kittest.None{},
		Settings: Settings{Cluster: "c1", ProjectID: "p", Subnet: sub, Node: "n1", Port: DefaultPort, Retry: time.Hour},
		Dial:     d.dial, Timing: Timing{Active: time.Second, Reach: 200 * time.Millisecond, Block: 200 * time.Millisecond},
		// Waiting is OVN plugging the port: it is ACTIVE at the first pause.
		Pause: func(context.Context, time.Duration) {
			for _, id := range d.f.IDs("ports") {
				d.f.Set("ports", id, "status", "ACTIVE")
			}
		}}
	return p, cl
}

func recordedAnswer(t *testing.T, cl client.Client) kuryrv1.AddressGroupProbe {
	t.Helper()
	var n corev1.Node
	if err := cl.Get(context.Background(), client.ObjectKey{Name: "n1"}, &n); err != nil {
		t.Fatal(err)
	}
	if _, ok := n.Annotations[kuryrv1.ProbePortAnnotation]; ok {
		t.Errorf("the probe port's annotation is left on the node")
	}
	var r kuryrv1.AddressGroupProbe
	if err := json.Unmarshal([]byte(n.Annotations[kuryrv1.AddressGroupProbeAnnotation]), &r); err != nil {
		t.Fatalf("the answer recorded on the node: %v", err)
	}
	return r
}

// TestProbe: the answer follows the dataplane; the probe's port, security
// group and address group are gone afterwards, and its answer is on the
// node.
func TestProbe(t *testing.T) {
	for _, tc := range []struct {
		name                string
		enforced, unplugged bool
		want                kuryrv1.AddressGroupVerdict
		addressGroups       bool
	}{
		{"enforced", true, false, Enforced, true},
		{"not enforced", false, false, NotEnforced, false},
		{"never answered", true, true, Unknown, false},
		{"no route once emptied (proves nothing)", true, false, Unknown, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := &dataplane{enforced: tc.enforced, unplugged: tc.unplugged, unreachable: strings.HasPrefix(tc.name, "no route")}
			p, cl := newProber(t, d)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if tc.want == Unknown {
				// An Unknown answer is probed again after Retry: stop then.
				p.Pause = func(context.Context, time.Duration) {
					for _, id := range d.f.IDs("ports") {
						d.f.Set("ports", id, "status", "ACTIVE")
					}
					if _, decided := p.AddressGroups(); decided {
						cancel()
					}
				}
			}
			if err := p.Start(ctx); err != nil {
				t.Fatal(err)
			}
			use, decided := p.AddressGroups()
			if !decided || use != tc.addressGroups || p.Result().Verdict != tc.want {
				t.Errorf("answer %+v (use %v decided %v), want %s", p.Result(), use, decided, tc.want)
			}
			for _, c := range []string{"ports", "security-groups", "address-groups"} {
				if left := d.f.IDs(c); len(left) > 0 && !(c == "security-groups" && onlyDefault(d.f, left)) {
					t.Errorf("%s left: %v", c, left)
				}
			}
			if r := recordedAnswer(t, cl); r.Verdict != tc.want {
				t.Errorf("recorded %+v", r)
			}
			select {
			case <-p.Changes():
			default:
				t.Errorf("no change signalled")
			}
		})
	}
}

func onlyDefault(f *neutrontest.Fake, ids []string) bool {
	for _, id := range ids {
		if f.Get("security-groups", id)["name"] != "default" {
			return false
		}
	}
	return true
}

// TestRecordedAnswerIsReused: a restarted leader takes a recent definite
// answer and probes nothing.
func TestRecordedAnswerIsReused(t *testing.T) {
	d := &dataplane{enforced: true}
	p, cl := newProber(t, d)
	if err := p.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	writes := d.f.Writes()
	again := &Prober{Client: cl, Neutron: p.Neutron, Info: p.Info, Settings: p.Settings, Dial: d.dial}
	again.Settings.Reuse = time.Hour
	if err := again.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if use, decided := again.AddressGroups(); !use || !decided || d.f.Writes() != writes {
		t.Errorf("use %v decided %v, %d writes", use, decided, d.f.Writes()-writes)
	}
}

// TestProbeNeedsItsNode: without NODE_NAME the answer is Unknown at once,
// saying why.
func TestProbeNeedsItsNode(t *testing.T) {
	d := &dataplane{enforced: true}
	p, _ := newProber(t, d)
	p.Settings.Node = ""
	ctx, cancel := context.WithCancel(context.Background())
	p.Pause = func(context.Context, time.Duration) { cancel() }
	if err := p.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if r := p.Result(); r.Verdict != Unknown || !strings.Contains(r.Detail, "NODE_NAME") || d.dials != 0 {
		t.Errorf("%+v after %d dials", r, d.dials)
	}
	if errors.Is(ctx.Err(), context.Canceled) && d.f.Writes() != 0 {
		t.Errorf("%d Neutron writes", d.f.Writes())
	}
}

// TestTurnedOffKeepsTheAnswer: with address groups off, peers are security
// groups and the recorded answer says so, keeping the verdict for when
// they are turned on again (then taken without probing).
func TestTurnedOffKeepsTheAnswer(t *testing.T) {
	d := &dataplane{enforced: true}
	p, cl := newProber(t, d)
	if err := p.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	writes := d.f.Writes()
	off := &Prober{Client: cl, Neutron: p.Neutron, Info: p.Info, Settings: p.Settings, Dial: d.dial}
	off.Settings.Disabled, off.Settings.Reuse = true, time.Hour
	if err := off.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if use, decided := off.AddressGroups(); use || !decided {
		t.Errorf("off: use %v decided %v", use, decided)
	}
	if r := recordedAnswer(t, cl); !r.Off || r.Verdict != Enforced || r.AddressGroups {
		t.Errorf("recorded while off: %+v", r)
	}
	on := &Prober{Client: cl, Neutron: p.Neutron, Info: p.Info, Settings: p.Settings, Dial: d.dial}
	on.Settings.Reuse = time.Hour
	if err := on.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if use, _ := on.AddressGroups(); !use || d.f.Writes() != writes {
		t.Errorf("on again: use %v, %d Neutron writes", use, d.f.Writes()-writes)
	}
	if r := recordedAnswer(t, cl); r.Off || !r.AddressGroups {
		t.Errorf("recorded when on again: %+v", r)
	}
}

// TestRecordFromTheFutureIsNotReused: an answer dated ahead (another
// writer's, or a clock gone wrong) is not taken: the probe runs.
func TestRecordFromTheFutureIsNotReused(t *testing.T) {
	d := &dataplane{enforced: false}
	p, cl := newProber(t, d)
	raw, _ := json.Marshal(kuryrv1.AddressGroupProbe{Verdict: Enforced, AddressGroups: true, Time: time.Now().Add(time.Hour)})
	var n corev1.Node
	if err := cl.Get(context.Background(), client.ObjectKey{Name: "n1"}, &n); err != nil {
		t.Fatal(err)
	}
	n.Annotations = map[string]string{kuryrv1.AddressGroupProbeAnnotation: string(raw)}
	if err := cl.Update(context.Background(), &n); err != nil {
		t.Fatal(err)
	}
	p.Settings.Reuse = 24 * time.Hour
	if err := p.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if use, _ := p.AddressGroups(); use || p.Result().Verdict != NotEnforced {
		t.Errorf("a record from the future was trusted: %+v", p.Result())
	}
}

// A probe port Neutron is still creating (a crashed or unanswered run's:
// not bound yet) is deleted only once Neutron has bound it: deleted before,
// its OVN port could be made after the delete and stay.
func TestCleanupWaitsForAPortStillBeingCreated(t *testing.T) {
	d := &dataplane{}
	p, _ := newProber(t, d)
	p.Settings.BindTimeout = time.Minute
	id := d.f.Add("ports", neutrontest.Object{"tags": p.tags(), "binding:host_id": "n1",
		"binding:vif_type": "unbound", "created_at": time.Now().UTC().Format("2006-01-02T15:04:05Z")})
	done := make(chan struct{})
	go func() { p.cleanup(context.Background()); close(done) }()
	time.Sleep(1500 * time.Millisecond)
	if d.f.Get("ports", id) == nil {
		t.Fatal("the probe's port was deleted while Neutron was still creating it")
	}
	d.f.Set("ports", id, "binding:vif_type", "ovs")
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("cleanup did not end once the port was bound")
	}
	if d.f.Get("ports", id) != nil {
		t.Error("the probe's port was left once bound")
	}
}
