package ovs

import (
	"context"
	"testing"

	"github.com/ovn-org/libovsdb/ovsdb"
)

func TestOVSInterfaces(t *testing.T) {
	o, _ := startOVSDB(t)
	ctx := context.Background()
	for _, i := range []string{"1", "2"} {
		if err := o.AddPort(ctx, pod(i)); err != nil {
			t.Fatal(err)
		}
	}
	transact(t, o, insertExternalID(t, o, "tap2", "ovn-installed", "true")...)
	// What ovs-vswitchd writes once it has attached tap2.
	transact(t, o, ovsdb.Operation{Op: ovsdb.OperationUpdate, Table: tIface,
		Where: []ovsdb.Condition{{Column: "name", Function: ovsdb.ConditionEqual, Value: "tap2"}},
		Row:   ovsdb.Row{"ofport": 7, "link_state": "up", "admin_state": "up"}})
	got, err := o.Interfaces(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 {
		t.Fatalf("Interfaces: %+v, want tap1 and tap2", got)
	}
	tests := []struct {
		i           int
		name, id    string
		installed   bool
		ofport      int
		link, admin string
	}{
		{0, "tap1", "port-1", false, 0, "", ""},
		{1, "tap2", "port-2", true, 7, "up", "up"},
	}
	for _, tt := range tests {
		g := got[tt.i]
		if g.Name != tt.name || g.ExternalIDs["iface-id"] != tt.id || g.OVNInstalled != tt.installed {
			t.Errorf("interface %d: %+v, want %s with iface-id %s, ovn-installed %v", tt.i, g, tt.name, tt.id, tt.installed)
		}
		if g.OFPort != tt.ofport || g.LinkState != tt.link || g.AdminState != tt.admin || g.ExternalIDs["attached-mac"] == "" {
			t.Errorf("interface %s: %+v", g.Name, g)
		}
	}
}
