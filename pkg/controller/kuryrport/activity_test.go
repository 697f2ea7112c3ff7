package kuryrport

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	kuryrv1 "github.com/kuryr-k8s/kuryr/api/v1"
	"github.com/kuryr-k8s/kuryr/pkg/neutron"
	"github.com/kuryr-k8s/kuryr/pkg/neutron/neutrontest"
)

// The watcher asks Neutron about the waiting ports only, a query per 50,
// and marks active exactly those Neutron reports ACTIVE: not the ports of
// KuryrPorts already active, not the cluster's other ports.
func TestActivityAsksAboutWaitingPortsOnly(t *testing.T) {
	fn := neutrontest.New(t)
	var objs []client.Object
	wantActive := map[string]bool{}
	for i := range 250 {
		status := "DOWN"
		if i%2 == 0 {
			status = "ACTIVE"
		}
		id := fn.Add("ports", neutrontest.Object{"status": status})
		k := kp(fmt.Sprintf("pod-%d", i), fmt.Sprintf("uid-%d", i))
		k.Status.VIFs = map[string]kuryrv1.VIF{kuryrv1.DefaultInterface: {PortID: id}}
		objs = append(objs, k)
		wantActive[k.Name] = status == "ACTIVE"
	}
	done := kp("done", "uid-done") // already marked: not asked about again
	done.Status.VIFs = map[string]kuryrv1.VIF{kuryrv1.DefaultInterface: {PortID: fn.Add("ports", neutrontest.Object{"status": "ACTIVE"}), Active: true}}
	unplugged := kp("new", "uid-new") // no port yet
	unplugged.Status.VIFs = map[string]kuryrv1.VIF{kuryrv1.DefaultInterface: {}}
	fn.Add("ports", neutrontest.Object{"status": "ACTIVE"}) // another port of the cluster
	objs = append(objs, done, unplugged)

	c := kuryrPorts(t, objs...)
	w := &ActivityWatcher{Client: c, Neutron: neutron.New(fn.Client(t)), Interval: time.Second}
	if _, err := w.sweep(context.Background()); err != nil {
		t.Fatal(err)
	}

	if got := fn.Requests["GET ports"]; got != 5 {
		t.Errorf("%d port queries for 250 waiting ports, want 5", got)
	}
	var list kuryrv1.KuryrPortList
	if err := c.List(context.Background(), &list); err != nil {
		t.Fatal(err)
	}
	for _, k := range list.Items {
		active := k.Status.VIFs[kuryrv1.DefaultInterface].Active
		want, asked := wantActive[k.Name]
		if !asked {
			want = k.Name == "done"
		}
		if active != want {
			t.Errorf("%s active=%v, want %v", k.Name, active, want)
		}
	}

	// A second round asks about the 125 still waiting only.
	if _, err := w.sweep(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := fn.Requests["GET ports"]; got != 8 {
		t.Errorf("%d port queries after a second round, want 8 (3 for 125 ports)", got)
	}
}

// Rounds are spaced by Interval, or by Spacing times as long as Neutron
// took to answer (at most 10 Intervals): polling never takes more than a
// share of a busy Neutron. After a failed round, Interval.
func TestActivitySpacing(t *testing.T) {
	w := &ActivityWatcher{Interval: time.Second}
	for _, c := range []struct {
		asked time.Duration
		err   error
		want  time.Duration
	}{
		{50 * time.Millisecond, nil, time.Second},
		{time.Second, nil, 4 * time.Second},
		{3 * time.Second, nil, 10 * time.Second},
		{30 * time.Second, errors.New("timeout"), time.Second},
	} {
		if got := w.next(c.asked, c.err); got != c.want {
			t.Errorf("after Neutron answered in %s (%v): next in %s, want %s", c.asked, c.err, got, c.want)
		}
	}
}

// What Neutron said before a query failed is marked all the same; after a
// refusal the other queries are made, after a server error not.
func TestActivityPartialAnswers(t *testing.T) {
	fn := neutrontest.New(t)
	var objs []client.Object
	for i := range 120 { // sorted by id as created
		k := kp(fmt.Sprintf("pod-%03d", i), fmt.Sprintf("uid-%d", i))
		k.Status.VIFs = map[string]kuryrv1.VIF{kuryrv1.DefaultInterface: {PortID: fn.Add("ports", neutrontest.Object{"status": "ACTIVE"})}}
		objs = append(objs, k)
	}
	c := kuryrPorts(t, objs...)
	w := &ActivityWatcher{Client: c, Neutron: neutron.New(fn.Client(t)), Interval: time.Second}
	active := func() int {
		var list kuryrv1.KuryrPortList
		if err := c.List(context.Background(), &list); err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, k := range list.Items {
			if k.Status.VIFs[kuryrv1.DefaultInterface].Active {
				n++
			}
		}
		return n
	}
	for _, step := range []struct {
		status     int
		wantQuery  int
		wantActive int
	}{
		{503, 1, 0},  // the first of 3 queries (50, 50, 20) fails: no other
		{400, 3, 70}, // the second refused: the first and third marked
		{0, 1, 120},
	} {
		calls := 0
		fn.Fail = func(method, collection string) (int, string) {
			if method != "GET" || collection != "ports" {
				return 0, ""
			}
			calls++
			if (step.status == 400 && calls == 2) || step.status == 503 {
				return step.status, `{"NeutronError": {"type": "X", "message": "no", "detail": ""}}`
			}
			return 0, ""
		}
		_, err := w.sweep(context.Background())
		if (err != nil) != (step.status != 0) || calls != step.wantQuery || active() != step.wantActive {
			t.Fatalf("status %d: err %v, %d queries, %d active; want %d queries, %d active", step.status, err, calls, active(), step.wantQuery, step.wantActive)
		}
	}
}

// A port that stays inactive past a minute is asked about every 30 s, not
// every round: ports that never become ACTIVE cost a query now and then.
func TestActivityStuckPortsAskedLessOften(t *testing.T) {
	fn := neutrontest.New(t)
	k := kp("stuck", "uid-stuck")
	k.Status.VIFs = map[string]kuryrv1.VIF{kuryrv1.DefaultInterface: {PortID: fn.Add("ports", neutrontest.Object{"status": "DOWN"})}}
	c := kuryrPorts(t, k)
	now := time.Now()
	w := &ActivityWatcher{Client: c, Neutron: neutron.New(fn.Client(t)), Interval: time.Second, timeNow: func() time.Time { return now }}
	queries := 0
	for range 150 { // 150 rounds a second apart
		before := fn.Requests["GET ports"]
		if _, err := w.sweep(context.Background()); err != nil {
			t.Fatal(err)
		}
		queries += fn.Requests["GET ports"] - before
		now = now.Add(time.Second)
	}
	// 61 in its first minute (0 s to 60 s), then at 61, 91 and 121 s.
	if queries != 64 {
		t.Errorf("%d queries in 150 s about a port that never becomes ACTIVE, want 64", queries)
	}
}

// kuryrPorts is a fake Kubernetes client holding objs, KuryrPorts with a
// status subresource.
func kuryrPorts(t *testing.T, objs ...client.Object) client.Client {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := kuryrv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	return fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).WithStatusSubresource(&kuryrv1.KuryrPort{}).Build()
}
