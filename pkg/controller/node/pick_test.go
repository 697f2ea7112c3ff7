package node

import (
	"testing"
	"time"

	"github.com/kuryr-k8s/kuryr/pkg/neutron"
)

// Of a node's ports found by tag, the one kept is done, bound, oldest, in
// that order: never one Neutron may still be creating over a working one.
func TestPick(t *testing.T) {
	now := time.Date(2026, 11, 29, 8, 0, 0, 0, time.UTC)
	port := func(id, vif string, age time.Duration) neutron.Port {
		var p neutron.Port
		p.ID, p.HostID, p.VIFType, p.CreatedAt = id, "n1", vif, now.Add(-age)
		return p
	}
	for _, tc := range []struct {
		name  string
		ports []neutron.Port
		want  string
	}{
		{"one", []neutron.Port{port("a", "ovs", time.Hour)}, "a"},
		{"a duplicate still being created listed first", []neutron.Port{port("new", "unbound", time.Second), port("old", "ovs", time.Hour)}, "old"},
		{"bound before failed", []neutron.Port{port("failed", "binding_failed", time.Hour), port("bound", "ovs", time.Minute)}, "bound"},
		{"two bound: the oldest", []neutron.Port{port("young", "ovs", time.Minute), port("old", "ovs", time.Hour)}, "old"},
		{"all still being created: the oldest", []neutron.Port{port("b", "unbound", time.Second), port("a", "unbound", 2*time.Second)}, "a"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := pick(tc.ports, time.Minute, now); got.ID != tc.want {
				t.Fatalf("kept %s, want %s", got.ID, tc.want)
			}
		})
	}
}
