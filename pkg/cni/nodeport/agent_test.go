package nodeport

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/go-logr/logr"

	kuryrv1 "github.com/kuryr-k8s/kuryr/api/v1"
	"github.com/kuryr-k8s/kuryr/pkg/names"
)

type fakeOVS struct{ ports map[string]string }

func (f *fakeOVS) EnsureInternalPort(_ context.Context, _, name, portID, _ string) error {
	f.ports[name] = portID
	return nil
}
func (f *fakeOVS) DelPort(_ context.Context, name string) error { delete(f.ports, name); return nil }

type fakeLink struct {
	ovs        *fakeOVS
	configured *Plan
	fail       error
}

func (l *fakeLink) Configure(_ string, p *Plan, _ bool) error {
	if l.fail != nil {
		return l.fail
	}
	l.configured = p
	return nil
}
func (l *fakeLink) Exists(name string) bool                     { _, ok := l.ovs.ports[name]; return ok }
func (l *fakeLink) Watch(context.Context, string, func()) error { return nil }

func annotations(t *testing.T, np kuryrv1.NodePort) map[string]string {
	raw, err := json.Marshal(np)
	if err != nil {
		t.Fatal(err)
	}
	return map[string]string{kuryrv1.NodePortAnnotation: string(raw)}
}

func TestAgentFollowsTheAnnotation(t *testing.T) {
	o := &fakeOVS{ports: map[string]string{names.NodePortInterface: "previous"}}
	l := &fakeLink{ovs: o}
	a := NewAgent(o, l, "br-int", true)
	ctx := context.Background()
	// Before the Node is read, a restarted daemon touches nothing.
	if err := a.apply(ctx); err != nil || o.ports[names.NodePortInterface] != "previous" {
		t.Fatalf("before the node was read: %v %v", err, o.ports)
	}
	np := kuryrv1.NodePort{PortID: "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0", MACAddress: "fa:16:3e:00:00:09",
		IPs: []string{"10.11.0.5/24"}, Routes: []kuryrv1.Route{{Destination: "10.10.0.0/16", Gateway: "10.11.0.1"}}}
	a.SetAnnotations(logr.Discard(), annotations(t, np))
	if err := a.apply(ctx); err != nil || o.ports[names.NodePortInterface] != np.PortID || l.configured == nil {
		t.Fatalf("plugged: %v %v %+v", err, o.ports, l.configured)
	}
	// An invalid annotation (a default route) changes nothing.
	bad := np
	bad.Routes = []kuryrv1.Route{{Destination: "0.0.0.0/0", Gateway: "10.11.0.1"}}
	a.SetAnnotations(logr.Discard(), annotations(t, bad))
	if a.want == nil || len(a.want.Routes) != 1 || a.want.Routes[0].Dst.String() != "10.10.0.0/16" {
		t.Errorf("an invalid annotation replaced the plan: %+v", a.want)
	}
	l.fail = errors.New("netlink says no")
	if err := a.apply(ctx); err == nil {
		t.Error("a failure was not reported")
	}
	a.SetAnnotations(logr.Discard(), nil)
	if err := a.apply(ctx); err != nil || len(o.ports) != 0 {
		t.Errorf("annotation gone: %v %v", err, o.ports)
	}
}
