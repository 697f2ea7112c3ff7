package kuryrport

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	kuryrv1 "github.com/kuryr-k8s/kuryr/api/v1"
	"github.com/kuryr-k8s/kuryr/pkg/controller/nested"
	"github.com/kuryr-k8s/kuryr/pkg/names"
	"github.com/kuryr-k8s/kuryr/pkg/neutron"
	"github.com/kuryr-k8s/kuryr/pkg/neutron/neutrontest"
	"github.com/kuryr-k8s/kuryr/pkg/openstack"
)

// nestedEnv is an env whose node-a is a VM: its port on the worker subnet
// is the parent of a trunk.
func nestedEnv(t *testing.T, mode string, objs ...*kuryrv1.KuryrPort) (e *env, parent, trunk string) {
	return mixedEnv(t, mode, "", objs...)
}

// mixedEnv is nestedEnv with the cluster's mode def and node-a's label
// (none if empty).
func mixedEnv(t *testing.T, def, label string, objs ...*kuryrv1.KuryrPort) (e *env, parent, trunk string) {
	t.Helper()
	e = newEnv(t)
	for _, o := range objs {
		if err := e.r.Create(context.Background(), o); err != nil {
			t.Fatal(err)
		}
	}
	e.fake.Add("networks", neutrontest.Object{"id": "net-workers", "name": "workers", "mtu": 1442})
	e.fake.Add("subnets", neutrontest.Object{"id": "workers", "network_id": "net-workers", "cidr": "10.20.0.0/24",
		"gateway_ip": "10.20.0.1", "ip_version": 4})
	parent = e.fake.Add("ports", neutrontest.Object{"status": "ACTIVE", "mac_address": "fa:16:3e:00:00:01", "network_id": "net-workers",
		"fixed_ips": []neutrontest.Object{{"subnet_id": "workers", "ip_address": "10.20.0.5"}}})
	trunk = e.fake.Add("trunks", neutrontest.Object{"port_id": parent, "sub_ports": []neutrontest.Object{}})
	e.fake.Set("ports", parent, "trunk_details", neutrontest.Object{"trunk_id": trunk})
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a"},
		Status: corev1.NodeStatus{Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.20.0.5"}}}}
	nc := e.r.Neutron.(*neutron.Client)
	if label != "" {
		node.Labels = map[string]string{kuryrv1.PodVIFLabel: label}
	}
	nodes := fake.NewClientBuilder().WithObjects(node, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-b"}}).Build()
	e.r.Nested = &nested.Placer{Modes: &nested.Modes{Nodes: nodes, Default: def},
		Parents: &nested.Parents{Neutron: nc, Nodes: nodes, Subnets: []string{"workers"}},
		Trunks:  &nested.Trunks{Neutron: nc}, Pairs: &nested.Pairs{Neutron: nc, Attempts: 3}}
	return e, parent, trunk
}

// TestNestedVLAN: the pod's port is created with no host binding, becomes
// a subport of its VM's trunk with a VLAN id, and the KuryrPort says so;
// deleting the KuryrPort detaches and deletes it.
func TestNestedVLAN(t *testing.T) {
	e, parent, trunk := nestedEnv(t, nested.ModeVLAN, kp("web", "uid-1"))
	if err := e.reconcile(t, "web"); err != nil {
		t.Fatal(err)
	}
	vif, ok := e.get(t, "web").Status.DefaultVIF()
	if !ok || vif.Nested == nil || vif.Nested.Mode != kuryrv1.NestedVLAN || vif.Nested.TrunkID != trunk ||
		vif.Nested.ParentPortID != parent || vif.Nested.VLANID != 1 {
		t.Fatalf("VIF %+v nested %+v", vif, vif.Nested)
	}
	port := e.fake.Get("ports", vif.PortID)
	if port["binding:host_id"] != nil && port["binding:host_id"] != "" || port["device_owner"] != neutron.SubportOwner {
		t.Errorf("pod port: host %v owner %v; want no host and a subport", port["binding:host_id"], port["device_owner"])
	}
	deleteKP(t, e, "web")
	if e.fake.Get("ports", vif.PortID) != nil || len(e.fake.Get("trunks", trunk)["sub_ports"].([]neutrontest.Object)) != 0 {
		t.Errorf("port or subport left: %v / %v", e.fake.Get("ports", vif.PortID), e.fake.Get("trunks", trunk)["sub_ports"])
	}
}

// TestNestedMacvlan: the pod's port is on the VM port's network (a
// macvlan's frames leave untagged there), its address and MAC become an
// allowed address pair of the VM's port (the pod's port is never bound:
// the VIF is usable at once); deleting the KuryrPort takes the pair off.
func TestNestedMacvlan(t *testing.T) {
	e, parent, _ := nestedEnv(t, nested.ModeMacvlan, kp("web", "uid-1"))
	if err := e.reconcile(t, "web"); err != nil {
		t.Fatal(err)
	}
	vif, _ := e.get(t, "web").Status.DefaultVIF()
	if vif.Nested == nil || vif.Nested.Mode != kuryrv1.NestedMacvlan || vif.Nested.ParentPortID != parent || !vif.Active {
		t.Fatalf("VIF %+v nested %+v", vif, vif.Nested)
	}
	if vif.MACAddress != nested.MacvlanMAC(vif.PortID) {
		t.Errorf("the macvlan pod's MAC %s, want the pair's %s (not the port's)", vif.MACAddress, nested.MacvlanMAC(vif.PortID))
	}
	if net := e.fake.Get("ports", vif.PortID)["network_id"]; net != "net-workers" {
		t.Errorf("the macvlan pod's port is on %v, want the VM port's network", net)
	}
	pairs, _ := e.fake.Get("ports", parent)["allowed_address_pairs"].([]any)
	if len(pairs) != 1 {
		t.Fatalf("pairs %v", e.fake.Get("ports", parent)["allowed_address_pairs"])
	}
	deleteKP(t, e, "web")
	if pairs, _ := e.fake.Get("ports", parent)["allowed_address_pairs"].([]any); len(pairs) != 0 || e.fake.Get("ports", vif.PortID) != nil {
		t.Errorf("pair or port left: %v", pairs)
	}
}

// TestMixedCluster: in a cluster of hypervisors (neutron-vif), a node
// labelled nested-vlan is a VM node: its pod's port is a subport, while a
// pod on another node gets a port bound to that node.
func TestMixedCluster(t *testing.T) {
	vmPod, hvPod := kp("web", "uid-1"), kp("db", "uid-2")
	hvPod.Spec.PodNodeName = "node-b"
	e, _, trunk := mixedEnv(t, nested.ModeNeutron, nested.ModeVLAN, vmPod, hvPod)
	for _, name := range []string{"web", "db"} {
		if err := e.reconcile(t, name); err != nil {
			t.Fatal(err)
		}
	}
	vm, _ := e.get(t, "web").Status.DefaultVIF()
	hv, _ := e.get(t, "db").Status.DefaultVIF()
	if vm.Nested == nil || vm.Nested.TrunkID != trunk || hv.Nested != nil {
		t.Errorf("VM node's VIF %+v, hypervisor's %+v", vm.Nested, hv.Nested)
	}
	if host := e.fake.Get("ports", hv.PortID)["binding:host_id"]; host != "node-b" {
		t.Errorf("hypervisor pod's port bound to %v", host)
	}
}

func deleteKP(t *testing.T, e *env, name string) {
	t.Helper()
	if err := e.r.Delete(context.Background(), e.get(t, name)); err != nil {
		t.Fatal(err)
	}
	if err := e.reconcile(t, name); err != nil {
		t.Fatal(err)
	}
}

// A VM pod's port made by an unanswered create is left alone until it is
// older than BindTimeout (Neutron may still be creating it: nothing in an
// unbound port tells), then adopted and attached; none is made twice.
func TestNestedUnclearCreateAdoptedOnceSettled(t *testing.T) {
	e, parent, trunk := nestedEnv(t, nested.ModeVLAN, kp("web", "uid-1"))
	e.r.Settings.BindTimeout = time.Minute
	e.fake.Unanswered = unanswered(504)
	if err := e.reconcile(t, "web"); err == nil {
		t.Fatal("want the unclear error")
	}
	e.fake.Unanswered = nil
	e.r.Ledger.Unanswered.Now = func() time.Time { return time.Now().Add(openstack.UnclearSettle) }
	res, err := e.reconcileResult(t, "web")
	if err != nil || res.RequeueAfter < 50*time.Second || e.fake.Writes() != 1 {
		t.Fatalf("a port just made: %+v %v, %d writes; want it left alone for about BindTimeout", res, err, e.fake.Writes())
	}
	var id string // the pod's port: not the VM's (the fake lists in no order)
	for _, p := range e.fake.IDs("ports") {
		if p != parent {
			id = p
		}
	}
	// A minute later (the ledger holds the copy the lookup found).
	found, ok := e.r.Ledger.Lookup("uid-1")
	if !ok || found.ID != id || !e.r.Ledger.Listed("uid-1") {
		t.Fatalf("the port found (%s, listed %v) is not the one made (%s)", found.ID, e.r.Ledger.Listed("uid-1"), id)
	}
	found.CreatedAt = found.CreatedAt.Add(-time.Minute)
	e.r.Ledger.Refresh("uid-1", found)
	if err := e.reconcile(t, "web"); err != nil {
		t.Fatal(err)
	}
	vif, _ := e.get(t, "web").Status.DefaultVIF()
	if vif.PortID != id || e.fake.Requests["POST ports"] != 1 || len(e.fake.Get("trunks", trunk)["sub_ports"].([]neutrontest.Object)) != 1 {
		t.Errorf("vif %s (want %s), %d creates, subports %v", vif.PortID, id, e.fake.Requests["POST ports"], e.fake.Get("trunks", trunk)["sub_ports"])
	}
}

// A VM pod's port kuryr saw created is not left to settle on a retry (an
// attach that failed once), however young; one the ledger knows only from
// the listing at a restart is, and a pod deleted meanwhile does not delete
// it (the sweep does, once Neutron is done with it).
func TestNestedSettlesOnlyPortsFoundAtARestart(t *testing.T) {
	e, _, _ := nestedEnv(t, nested.ModeVLAN, kp("web", "uid-1"))
	e.r.Settings.BindTimeout = time.Minute
	e.fake.Fail = failOn("PUT", "trunks", 500)
	if err := e.reconcile(t, "web"); err == nil {
		t.Fatal("want the attach error")
	}
	e.fake.Fail = nil
	if res, err := e.reconcileResult(t, "web"); err != nil || res.RequeueAfter > 0 {
		t.Fatalf("retry of a port kuryr created: %+v %v; want it attached at once", res, err)
	}

	e2, _, _ := nestedEnv(t, nested.ModeVLAN, kp("db", "uid-2"))
	e2.r.Settings.BindTimeout = time.Minute
	id := e2.fake.Add("ports", neutrontest.Object{"network_id": "net-workers", "mac_address": "fa:16:3e:00:00:09",
		"status": "DOWN", "binding:vif_type": "unbound", "created_at": time.Now().UTC().Format(time.RFC3339),
		"fixed_ips": []neutrontest.Object{{"subnet_id": "workers", "ip_address": "10.20.0.9"}},
		"tags":      []string{names.ClusterTag("c1"), names.PodTag("uid-2")}})
	e2.start(t)
	writes := e2.fake.Writes()
	if res, err := e2.reconcileResult(t, "db"); err != nil || res.RequeueAfter < 50*time.Second || e2.fake.Writes() != writes {
		t.Fatalf("a port found at a restart, just made: %+v %v, %d writes; want it left alone", res, err, e2.fake.Writes()-writes)
	}
	deleteKP(t, e2, "db")
	if e2.fake.Get("ports", id) == nil || e2.fake.Writes() != writes {
		t.Errorf("the pod's deletion wrote %d times (port left: %v)", e2.fake.Writes()-writes, e2.fake.Get("ports", id) != nil)
	}
}
