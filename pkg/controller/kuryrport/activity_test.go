package kuryrport

import (
	"context"
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

// The watcher asks Neutron about the waiting ports only, a query per 100,
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

	scheme := runtime.NewScheme()
	if err := kuryrv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).WithStatusSubresource(&kuryrv1.KuryrPort{}).Build()
	w := &ActivityWatcher{Client: c, Neutron: neutron.New(fn.Client(t)), Interval: time.Second}
	if err := w.sweep(context.Background()); err != nil {
		t.Fatal(err)
	}

	if got := fn.Requests["GET ports"]; got != 3 {
		t.Errorf("%d port queries for 250 waiting ports, want 3", got)
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
	if err := w.sweep(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := fn.Requests["GET ports"]; got != 5 {
		t.Errorf("%d port queries after a second round, want 5 (2 for 125 ports)", got)
	}
}

// Rounds are spaced by Interval, or by Spacing times a slow round's own
// length: polling never takes more than a share of a busy Neutron.
func TestActivitySpacing(t *testing.T) {
	w := &ActivityWatcher{Interval: time.Second}
	for _, c := range []struct{ took, want time.Duration }{
		{50 * time.Millisecond, time.Second},
		{time.Second, 4 * time.Second},
		{3 * time.Second, 12 * time.Second},
	} {
		if got := w.next(c.took); got != c.want {
			t.Errorf("after a round of %s: next in %s, want %s", c.took, got, c.want)
		}
	}
}
