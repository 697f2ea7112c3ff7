package neutron_test

import (
	"context"
	"testing"

	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"

	"github.com/kuryr-k8s/kuryr/pkg/neutron"
	"github.com/kuryr-k8s/kuryr/pkg/neutron/neutrontest"
)

// vmPort makes a VM's port holding ip on subnet, parent of a trunk.
func vmPort(t *testing.T, f *neutrontest.Fake, ip, subnet string) (port, trunk string) {
	t.Helper()
	port = f.Add("ports", neutrontest.Object{"network_id": "net-vm", "status": "ACTIVE", "revision_number": 3,
		"mac_address": "fa:16:3e:aa:bb:cc", "fixed_ips": []neutrontest.Object{{"subnet_id": subnet, "ip_address": ip}}})
	trunk = f.Add("trunks", neutrontest.Object{"port_id": port, "sub_ports": []neutrontest.Object{}})
	f.Set("ports", port, "trunk_details", neutrontest.Object{"trunk_id": trunk, "sub_ports": []neutrontest.Object{}})
	return port, trunk
}

// TestTrunks: the parent is found from the VM's address on a worker
// subnet; subports attach with their VLAN ids (one already taken refuses
// the call); a subport's delete detaches it first; detaching a port no
// longer there is no error.
func TestTrunks(t *testing.T) {
	f := neutrontest.New(t)
	c := neutron.New(f.Client(t))
	ctx := context.Background()
	parent, trunk := vmPort(t, f, "10.20.0.5", "sub-workers")
	f.Add("ports", neutrontest.Object{"fixed_ips": []neutrontest.Object{{"subnet_id": "sub-other", "ip_address": "10.20.0.5"}}})
	got, err := c.ParentPorts(ctx, "10.20.0.5", []string{"sub-workers"})
	if err != nil || len(got) != 1 || got[0].ID != parent || got[0].TrunkID != trunk {
		t.Fatalf("ParentPorts = %+v, %v; want %s with trunk %s", got, err, parent, trunk)
	}
	a := f.Add("ports", neutrontest.Object{"status": "DOWN"})
	b := f.Add("ports", neutrontest.Object{"status": "DOWN"})
	if err := c.AddSubports(ctx, trunk, []neutron.Subport{{PortID: a, SegmentationType: "vlan", SegmentationID: 101}}); err != nil {
		t.Fatal(err)
	}
	err = c.AddSubports(ctx, trunk, []neutron.Subport{{PortID: b, SegmentationType: "vlan", SegmentationID: 101}})
	if !neutron.VLANTaken(err) {
		t.Fatalf("second attach with VLAN 101: %v, want DuplicateSubPort", err)
	}
	subs, err := c.Subports(ctx, trunk)
	if err != nil || len(subs) != 1 || subs[0].PortID != a || subs[0].SegmentationID != 101 {
		t.Fatalf("Subports = %+v, %v", subs, err)
	}
	if p := f.Get("ports", a); p["device_owner"] != neutron.SubportOwner || p["status"] != "ACTIVE" {
		t.Errorf("attached port: owner %v status %v, want trunk:subport and the parent's ACTIVE", p["device_owner"], p["status"])
	}
	if err := c.DeletePort(ctx, a); err != nil {
		t.Fatalf("delete a subport: %v", err)
	}
	if f.Get("ports", a) != nil {
		t.Error("subport not deleted")
	}
	if err := c.RemoveSubports(ctx, trunk, []string{a, b}); err != nil {
		t.Errorf("detach ports not on the trunk: %v", err)
	}
}

// TestAddressPairs: a pair set at the port's revision sticks; one set at
// an older revision is refused (412), so concurrent writers never drop
// each other's pairs.
func TestAddressPairs(t *testing.T) {
	f := neutrontest.New(t)
	c := neutron.New(f.Client(t))
	ctx := context.Background()
	parent, _ := vmPort(t, f, "10.20.0.6", "sub-workers")
	p, err := c.GetParentPort(ctx, parent)
	if err != nil {
		t.Fatal(err)
	}
	pair := []ports.AddressPair{{IPAddress: "10.10.0.7", MACAddress: "fa:16:3e:00:00:07"}}
	if err := c.SetAddressPairs(ctx, parent, pair, p.RevisionNumber); err != nil {
		t.Fatal(err)
	}
	err = c.SetAddressPairs(ctx, parent, nil, p.RevisionNumber)
	if !neutron.PreconditionFailed(err) {
		t.Fatalf("stale revision: %v, want 412", err)
	}
	p, _ = c.GetParentPort(ctx, parent)
	if len(p.AllowedAddressPairs) != 1 || p.AllowedAddressPairs[0].IPAddress != "10.10.0.7" {
		t.Errorf("pairs %+v", p.AllowedAddressPairs)
	}
}
