package daemon

import (
	"context"
	"encoding/json"
	"slices"
	"testing"

	"github.com/containernetworking/cni/pkg/types"
	current "github.com/containernetworking/cni/pkg/types/100"

	kuryrv1 "github.com/kuryr-k8s/kuryr/api/v1"
	"github.com/kuryr-k8s/kuryr/pkg/cni/plug"
	"github.com/kuryr-k8s/kuryr/pkg/cni/records"
)

// TestNestedAddDel: on a VM node a pod gets a VLAN interface of the NIC
// with its subport's id, recorded in a file with its namespace (there is
// no OVS); DEL takes the interface out of the pod and the record away; a
// KuryrPort bound to a hypervisor is refused on a VM node and the reverse;
// the result names the pod interface alone (there is no host end).
func TestNestedAddDel(t *testing.T) {
	d, _, k := newDaemon()
	dir := &records.Dir{Path: t.TempDir()}
	d.OVS, d.Link, d.Usable = dir, "ens3", UsableImmediately
	kp := withVIF(kuryrPort("web", "u1"), func(v *kuryrv1.VIF) {
		v.Nested = &kuryrv1.NestedVIF{Mode: kuryrv1.NestedVLAN, ParentPortID: "p", TrunkID: "t", VLANID: 7}
	})
	d.Registry.Set(kp)
	raw, cerr := d.Handle(context.Background(), request("ADD", "web", "u1", "c1"))
	if cerr != nil {
		t.Fatal(cerr)
	}
	var res current.Result
	if err := json.Unmarshal(raw, &res); err != nil || len(res.Interfaces) != 1 || res.Interfaces[0].Sandbox != "/run/netns/c1" ||
		res.IPs[0].Interface == nil || *res.IPs[0].Interface != 0 {
		t.Errorf("result %s (%v): want the pod interface alone", raw, err)
	}
	if len(k.nested) != 1 || k.nested[0].VLANID != 7 || k.nested[0].Link != "ens3" || k.nested[0].Netns != "/run/netns/c1" {
		t.Fatalf("plugged %+v", k.nested)
	}
	recs, err := dir.Ports(context.Background())
	if err != nil || len(recs) != 1 || recs[0].Netns != "/run/netns/c1" || recs[0].PortID != portID("web") {
		t.Fatalf("records %+v, %v", recs, err)
	}
	if _, cerr := d.Handle(context.Background(), request("DEL", "web", "u1", "c1")); cerr != nil {
		t.Fatal(cerr)
	}
	if recs, _ := dir.Ports(context.Background()); len(recs) != 0 || len(k.removedPodIfs) != 1 {
		t.Errorf("after DEL: records %+v, pod interfaces removed %v", recs, k.removedPodIfs)
	}

	// A macvlan pod is routed through the node's shim until its DEL.
	mv := withVIF(kuryrPort("mv", "u3"), func(v *kuryrv1.VIF) {
		v.Nested = &kuryrv1.NestedVIF{Mode: kuryrv1.NestedMacvlan, ParentPortID: "p"}
	})
	d.Registry.Set(mv)
	if _, cerr := d.Handle(context.Background(), request("ADD", "mv", "u3", "c4")); cerr != nil {
		t.Fatal(cerr)
	}
	if len(k.shimRoutes) != 1 || k.shimRoutes[0] != "10.10.0.5" {
		t.Errorf("shim routes after a macvlan ADD: %v", k.shimRoutes)
	}
	if _, cerr := d.Handle(context.Background(), request("DEL", "mv", "u3", "c4")); cerr != nil {
		t.Fatal(cerr)
	}
	if len(k.shimRoutes) != 0 {
		t.Errorf("shim routes after its DEL: %v", k.shimRoutes)
	}
	// A late DEL of a pod whose address went to a new pod of the node
	// leaves the new pod's route.
	mv2 := withVIF(kuryrPort("mv2", "u4"), func(v *kuryrv1.VIF) {
		v.Nested = &kuryrv1.NestedVIF{Mode: kuryrv1.NestedMacvlan, ParentPortID: "p"}
	})
	d.Registry.Set(mv2)
	for _, add := range [][3]string{{"mv", "u3", "c6"}, {"mv2", "u4", "c7"}} {
		if _, cerr := d.Handle(context.Background(), request("ADD", add[0], add[1], add[2])); cerr != nil {
			t.Fatal(cerr)
		}
	}
	if _, cerr := d.Handle(context.Background(), request("DEL", "mv", "u3", "c6")); cerr != nil {
		t.Fatal(cerr)
	}
	if !slices.Contains(k.shimRoutes, "10.10.0.5") {
		t.Errorf("the late DEL took the new pod's route: %v", k.shimRoutes)
	}
	if _, cerr := d.Handle(context.Background(), request("DEL", "mv2", "u4", "c7")); cerr != nil {
		t.Fatal(cerr)
	}
	if len(k.shimRoutes) != 0 {
		t.Errorf("shim routes after both DELs: %v", k.shimRoutes)
	}

	d.Registry.Set(kuryrPort("db", "u2")) // bound to a hypervisor
	if _, cerr := d.Handle(context.Background(), request("ADD", "db", "u2", "c2")); cerr == nil || cerr.Code != types.ErrInvalidNetworkConfig {
		t.Errorf("hypervisor port on a VM node: %+v", cerr)
	}
	h, _, _ := newDaemon()
	h.Registry.Set(kp)
	if _, cerr := h.Handle(context.Background(), request("ADD", "web", "u1", "c3")); cerr == nil || cerr.Code != types.ErrInvalidNetworkConfig {
		t.Errorf("nested port on a hypervisor node: %+v", cerr)
	}
}

// TestKindProblems: CHECK finds an interface of another kind than the
// port data asks for, or a VLAN interface with another id.
func TestKindProblems(t *testing.T) {
	vlan := kuryrv1.VIF{Nested: &kuryrv1.NestedVIF{Mode: kuryrv1.NestedVLAN, VLANID: 7}}
	macvlan := kuryrv1.VIF{Nested: &kuryrv1.NestedVIF{Mode: kuryrv1.NestedMacvlan}}
	for _, tc := range []struct {
		name string
		vif  kuryrv1.VIF
		obs  plug.Observed
		bad  bool
	}{
		{"veth on a hypervisor", kuryrv1.VIF{}, plug.Observed{Kind: "veth"}, false},
		{"macvlan for a hypervisor port", kuryrv1.VIF{}, plug.Observed{Kind: "macvlan"}, true},
		{"the subport's VLAN", vlan, plug.Observed{Kind: "vlan", VLANID: 7}, false},
		{"another VLAN", vlan, plug.Observed{Kind: "vlan", VLANID: 8}, true},
		{"macvlan for a subport", vlan, plug.Observed{Kind: "macvlan"}, true},
		{"macvlan", macvlan, plug.Observed{Kind: "macvlan"}, false},
		{"veth for a macvlan port", macvlan, plug.Observed{Kind: "veth"}, true},
	} {
		if got := kindProblems(tc.vif, tc.obs); (len(got) > 0) != tc.bad {
			t.Errorf("%s: %v", tc.name, got)
		}
	}
}
