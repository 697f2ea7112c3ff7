package cleanup

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	kuryrv1 "github.com/kuryr-k8s/kuryr/api/v1"
	"github.com/kuryr-k8s/kuryr/pkg/names"
	"github.com/kuryr-k8s/kuryr/pkg/neutron"
	"github.com/kuryr-k8s/kuryr/pkg/neutron/neutrontest"
)

func TestUnboundPorts(t *testing.T) {
	bound := func(id, host, vifType string, created time.Time) neutron.Port {
		p := port(id, names.PodTag("uid-"+id))
		p.HostID, p.VIFType, p.CreatedAt = host, vifType, created
		return p
	}
	old := time.Now().Add(-time.Hour)
	o := Owners{Nodes: map[string]bool{"n1": true}, Cutoff: time.Now().Add(-MinAge),
		PortNode: map[string]string{"bound": "n1", "unbound": "n1", "elsewhere": "n1", "young": "n1", "node-gone": "n9"}}
	ports := []neutron.Port{
		bound("bound", "n1", "ovs", old),
		bound("unbound", "", "unbound", old),      // ML2/OVN took it for a virtual port
		bound("elsewhere", "n2", "ovs", old),      // bound to another node
		bound("young", "", "unbound", time.Now()), // its create may be under way
		bound("node-gone", "", "unbound", old),    // nothing to bind it to
		bound("nested", "", "unbound", old),       // a VM's pod: no PortNode
		bound("no-kuryrport", "", "unbound", old), // nobody's
	}
	got := UnboundPorts(ports, o)
	var ids []string
	for _, r := range got {
		ids = append(ids, r.Port.ID+"->"+r.Node)
	}
	if want := "[unbound->n1 elsewhere->n1]"; fmt.Sprint(ids) != want {
		t.Errorf("UnboundPorts = %v, want %s", fmt.Sprint(ids), want)
	}
}

// A live pod's port that Neutron unbound is bound to its node again by the
// sweep; a nested pod's port (bound to no host by design) is left alone,
// and a second sweep writes nothing.
func TestSweepRebindsUnboundPorts(t *testing.T) {
	fn := neutrontest.New(t)
	tag := names.ClusterTag("c1")
	old := time.Now().Add(-time.Hour).UTC().Format(time.RFC3339)
	unbound := fn.Add("ports", neutrontest.Object{"tags": []string{tag, names.PodTag("hv")}, "created_at": old,
		"binding:host_id": "", "binding:vif_type": "unbound", "status": "DOWN"})
	nested := fn.Add("ports", neutrontest.Object{"tags": []string{tag, names.PodTag("vm")}, "created_at": old,
		"binding:host_id": "", "binding:vif_type": "unbound", "status": "ACTIVE"})
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}
	vm := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "vm1"}}
	kp := func(uid, node, portID string, nestedVIF *kuryrv1.NestedVIF) *kuryrv1.KuryrPort {
		return &kuryrv1.KuryrPort{ObjectMeta: metav1.ObjectMeta{Name: uid, Namespace: "ns"},
			Spec:   kuryrv1.KuryrPortSpec{PodUID: uid, PodNodeName: node},
			Status: kuryrv1.KuryrPortStatus{VIFs: map[string]kuryrv1.VIF{"eth0": {PortID: portID, VIFType: "ovs", Nested: nestedVIF}}}}
	}
	c := fake.NewClientBuilder().WithScheme(sweepScheme()).WithObjects(node, vm,
		kp("hv", "n1", unbound, nil), kp("vm", "vm1", nested, &kuryrv1.NestedVIF{Mode: kuryrv1.NestedMacvlan})).Build()
	nc := neutron.New(fn.Client(t))
	sw := &Sweeper{Client: c, Neutron: nc, Binder: nc, Ledger: forgotten{}, Cluster: "c1", Router: "r"}
	if err := sw.Sweep(context.Background(), logr.Discard()); err != nil {
		t.Fatal(err)
	}
	if got := fn.Get("ports", unbound); got["binding:host_id"] != "n1" || got["binding:vif_type"] != "ovs" {
		t.Errorf("unbound port after the sweep: host %v, vif_type %v; want bound to n1", got["binding:host_id"], got["binding:vif_type"])
	}
	if got := fn.Get("ports", nested); got["binding:host_id"] != "" {
		t.Errorf("nested pod's port bound to %v, want no host", got["binding:host_id"])
	}
	before := fn.Writes()
	if err := sw.Sweep(context.Background(), logr.Discard()); err != nil {
		t.Fatal(err)
	}
	if fn.Writes() != before {
		t.Error("a sweep with every port bound wrote to Neutron")
	}
	// Neutron unbinding it again and again (another port holds its
	// address): rebound maxRebinds times in all, then left alone.
	for range 2 * maxRebinds {
		fn.Set("ports", unbound, "binding:host_id", "")
		fn.Set("ports", unbound, "binding:vif_type", "unbound")
		if err := sw.Sweep(context.Background(), logr.Discard()); err != nil {
			t.Fatal(err)
		}
	}
	if got := fn.Get("ports", unbound); got["binding:host_id"] != "" {
		t.Errorf("a port Neutron keeps unbinding was rebound more than %d times", maxRebinds)
	}
}
