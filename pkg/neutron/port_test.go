package neutron_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"reflect"
	"testing"

	"github.com/gophercloud/gophercloud/v2"

	"github.com/kuryr-k8s/kuryr/pkg/neutron"
	"github.com/kuryr-k8s/kuryr/pkg/neutron/neutrontest"
)

func spec() neutron.PortSpec {
	return neutron.PortSpec{
		Name: "ns/pod", NetworkID: "net-1", SubnetID: "sub-1", ProjectID: "p", HostID: "node-a",
		DeviceID: "uid-1", DeviceOwner: "compute:kuryr", SecurityGroups: []string{"sg"},
		Tags: []string{neutron.ClusterTag("c"), neutron.PodTag("uid-1")},
	}
}

func TestCreatePortTags(t *testing.T) {
	for _, tagOnCreate := range []bool{true, false} {
		t.Run(fmt.Sprintf("tagOnCreate=%v", tagOnCreate), func(t *testing.T) {
			fake := neutrontest.New(t)
			fake.TagOnCreate = tagOnCreate
			c := neutron.New(fake.Client(t))
			ctx := context.Background()
			p, err := c.CreatePort(ctx, spec())
			if err != nil {
				t.Fatal(err)
			}
			stored := fake.Get("ports", p.ID)
			if stored["binding:host_id"] != "node-a" || stored["device_owner"] != "compute:kuryr" || stored["name"] != "ns/pod" {
				t.Errorf("stored port %v", stored)
			}
			got, err := c.ListPorts(ctx, []string{neutron.ClusterTag("c")}, "")
			if err != nil || len(got) != 1 || neutron.PodUIDOf(got[0].Tags) != "uid-1" {
				t.Fatalf("tagged ports = %+v, %v", got, err)
			}
			wantWrites := map[bool]int{true: 1, false: 2}[tagOnCreate]
			if fake.Writes() != wantWrites {
				t.Errorf("writes = %d, want %d (%v)", fake.Writes(), wantWrites, fake.Requests)
			}
		})
	}
}

func TestDeletePortTwiceIsFine(t *testing.T) {
	fake := neutrontest.New(t)
	c := neutron.New(fake.Client(t))
	id := fake.Add("ports", neutrontest.Object{"name": "x"})
	for i := 0; i < 2; i++ {
		if err := c.DeletePort(context.Background(), id); err != nil {
			t.Fatalf("delete %d: %v", i, err)
		}
	}
}

func TestClassify(t *testing.T) {
	resp := func(code int, body string) error {
		return gophercloud.ErrUnexpectedResponseCode{Actual: code, Body: []byte(body)}
	}
	tests := []struct {
		err  error
		want neutron.Kind
	}{
		{resp(404, `{"NeutronError": {"type": "PortNotFound"}}`), neutron.KindNotFound},
		{resp(409, `{"NeutronError": {"type": "IpAddressGenerationFailure", "message": "No more IP addresses available"}}`), neutron.KindSubnetFull},
		{resp(409, `{"NeutronError": {"type": "OverQuota"}}`), neutron.KindQuota},
		{resp(409, `{"NeutronError": {"type": "PortInUse"}}`), neutron.KindConflict},
		{resp(400, `bad`), neutron.KindBadRequest},
		{resp(503, ``), neutron.KindUnavailable},
		{fmt.Errorf("wrapped: %w", &net.OpError{Op: "dial", Err: errors.New("connection refused")}), neutron.KindUnavailable},
		{context.DeadlineExceeded, neutron.KindUnavailable},
		{errors.New("something else"), neutron.KindOther},
	}
	for _, tt := range tests {
		if got := neutron.Classify(tt.err); got != tt.want {
			t.Errorf("Classify(%v) = %s, want %s", tt.err, got, tt.want)
		}
	}
}

func TestTags(t *testing.T) {
	tags := []string{neutron.ClusterTag("c1"), neutron.PodTag("u1"), neutron.NamespaceTag("ns")}
	got := []string{neutron.PodUIDOf(tags), neutron.NamespaceOf(tags), neutron.PodUIDOf(nil)}
	if want := []string{"u1", "ns", ""}; !reflect.DeepEqual(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
}
