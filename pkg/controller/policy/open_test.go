package policy

import (
	"context"
	"testing"
	"time"

	"github.com/kuryr-k8s/kuryr/pkg/neutron"
	"github.com/kuryr-k8s/kuryr/pkg/neutron/neutrontest"
)

// TestOpenGroupsMadeAgain: an open group deleted behind kuryr's back (no
// port carries it, so Neutron lets it go) is made again by the next
// resync, and IDs serves the new id instead of one every port create
// would be refused for; a resync that finds both groups changes nothing.
func TestOpenGroupsMadeAgain(t *testing.T) {
	ctx := context.Background()
	n := neutron.New(neutrontest.New(t).Client(t))
	o := &OpenGroups{Neutron: n, Cluster: "c1", ProjectID: "p", Unrestricted: []string{"10.0.0.0/8"}}
	if err := o.resync(ctx); err != nil { // before the first IDs: nothing to do
		t.Fatal(err)
	}
	in, out, err := o.IDs(ctx)
	if err != nil || in == "" || out == "" {
		t.Fatalf("IDs: %q %q %v", in, out, err)
	}
	if err := o.resync(ctx); err != nil {
		t.Fatal(err)
	}
	if in2, out2, _ := o.IDs(ctx); in2 != in || out2 != out {
		t.Fatalf("a resync with both groups there changed the ids: %s %s -> %s %s", in, out, in2, out2)
	}
	if err := n.DeleteSecurityGroup(ctx, in); err != nil {
		t.Fatal(err)
	}
	if err := o.resync(ctx); err != nil {
		t.Fatal(err)
	}
	in3, out3, err := o.IDs(ctx)
	if err != nil || in3 == in || in3 == "" || out3 != out {
		t.Fatalf("after the open-ingress group was deleted: %q %q %v; want a new ingress id, egress %s", in3, out3, err, out)
	}
	if _, err := n.GetSecurityGroup(ctx, in3); err != nil {
		t.Fatalf("the new open-ingress group: %v", err)
	}
}

// TestOpenGroupsStartKeepsThemWithFixedSources: with configured sources
// (nothing derived) the leader still checks the groups every Refresh: a
// deleted open-egress group is made again and served.
func TestOpenGroupsStartKeepsThemWithFixedSources(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	n := neutron.New(neutrontest.New(t).Client(t))
	o := &OpenGroups{Neutron: n, Cluster: "c1", ProjectID: "p", Unrestricted: []string{"10.0.0.0/8"}, Refresh: 20 * time.Millisecond}
	in, out, err := o.IDs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- o.Start(ctx) }()
	if err := n.DeleteSecurityGroup(ctx, out); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		in2, out2, err := o.IDs(ctx)
		if err == nil && out2 != out && in2 == in {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("open groups %q %q (%v) 5 s after the egress group %s was deleted", in2, out2, err, out)
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
