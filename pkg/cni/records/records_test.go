package records

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/kuryr-k8s/kuryr/pkg/ovs"
)

// TestRecords: an attachment recorded is listed (also as an interface
// with the external ids OVS would carry) until forgotten; forgetting one
// never recorded is no error; a name that is not one file is refused; a
// leftover temporary file of a crashed write is not an attachment; an
// unreadable record is set aside.
func TestRecords(t *testing.T) {
	d := &Dir{Path: filepath.Join(t.TempDir(), "attachments")}
	ctx := context.Background()
	if got, err := d.Ports(ctx); err != nil || len(got) != 0 {
		t.Fatalf("before any: %v, %v", got, err)
	}
	p := ovs.Port{Name: "tap0123", PortID: "port-1", MAC: "fa:16:3e:00:00:01", ContainerID: "c1", IfName: "eth0",
		PodName: "ns/web", Netns: "/run/netns/c1", IPs: []string{"10.10.0.5"}}
	if err := d.AddPort(ctx, p); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(d.Path, ".tap9.tmp"), []byte("{"), 0o600); err != nil {
		t.Fatal(err)
	}
	// A record a disk lost (empty after a reset) is set aside, not fatal.
	if err := os.WriteFile(filepath.Join(d.Path, "tap8.json"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := d.Ports(ctx)
	if err != nil || len(got) != 1 || !reflect.DeepEqual(got[0], p) {
		t.Fatalf("Ports = %+v, %v", got, err)
	}
	if _, err := os.Stat(filepath.Join(d.Path, ".tap8.unreadable")); err != nil {
		t.Errorf("unreadable record not set aside: %v", err)
	}
	ifs, err := d.Interfaces(ctx)
	if err != nil || len(ifs) != 1 || ifs[0].ExternalIDs["iface-id"] != "port-1" || ifs[0].ExternalIDs["attached-mac"] != p.MAC {
		t.Errorf("Interfaces = %+v, %v", ifs, err)
	}
	if err := d.AddPort(ctx, ovs.Port{Name: "../etc"}); err == nil {
		t.Error("a path accepted as an interface name")
	}
	for range 2 {
		if err := d.DelPort(ctx, "tap0123"); err != nil {
			t.Fatal(err)
		}
	}
	if got, _ := d.Ports(ctx); len(got) != 0 {
		t.Errorf("after DelPort: %+v", got)
	}
}
