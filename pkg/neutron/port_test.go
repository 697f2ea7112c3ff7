package neutron_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2"

	"github.com/kuryr-k8s/kuryr/pkg/names"
	"github.com/kuryr-k8s/kuryr/pkg/neutron"
	"github.com/kuryr-k8s/kuryr/pkg/neutron/neutrontest"
	"github.com/kuryr-k8s/kuryr/pkg/openstack"
)

func spec() neutron.PortSpec {
	return neutron.PortSpec{
		Name: "ns/pod", NetworkID: "net-1", SubnetID: "sub-1", ProjectID: "p", HostID: "node-a",
		DeviceID: "uid-1", DeviceOwner: "compute:kuryr", SecurityGroups: []string{"sg"},
		Tags: []string{names.ClusterTag("c"), names.PodTag("uid-1")},
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
			got, err := c.ListPorts(ctx, []string{names.ClusterTag("c")}, "")
			if err != nil || len(got) != 1 || names.PodUIDOf(got[0].Tags) != "uid-1" {
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
	// refused: a bulk request that did nothing, so the batcher may retry
	// each port alone.
	// unclear: a write that may have been done unseen, to be looked up
	// before it is done again.
	tests := []struct {
		err              error
		want             neutron.Kind
		refused, unclear bool
	}{
		{resp(404, `{"NeutronError": {"type": "PortNotFound"}}`), neutron.KindNotFound, true, false},
		{resp(409, `{"NeutronError": {"type": "IpAddressGenerationFailure", "message": "No more IP addresses available"}}`), neutron.KindSubnetFull, true, false},
		{resp(409, `{"NeutronError": {"type": "OverQuota"}}`), neutron.KindQuota, true, false},
		{resp(409, `{"NeutronError": {"type": "PortInUse"}}`), neutron.KindConflict, true, false},
		{resp(400, `bad`), neutron.KindBadRequest, true, false},
		{resp(503, ``), neutron.KindUnavailable, false, true},
		{resp(500, ``), neutron.KindUnavailable, false, true},
		{fmt.Errorf("wrapped: %w", &net.OpError{Op: "read", Err: errors.New("connection reset by peer")}), neutron.KindUnavailable, false, true},
		{context.DeadlineExceeded, neutron.KindUnavailable, false, true},
		{errors.New("something else"), neutron.KindOther, false, true},
		{nil, "", false, false},
	}
	for _, tt := range tests {
		if got := neutron.Classify(tt.err); got != tt.want {
			t.Errorf("Classify(%v) = %s, want %s", tt.err, got, tt.want)
		}
		if got := openstack.Refused(tt.err); got != tt.refused {
			t.Errorf("Refused(%v) = %v, want %v", tt.err, got, tt.refused)
		}
		if got := openstack.Unclear(tt.err); got != tt.unclear {
			t.Errorf("Unclear(%v) = %v, want %v", tt.err, got, tt.unclear)
		}
	}
}

// TestBatcherOverHTTP: concurrent creations through the batcher each get
// their own, tagged port, in fewer requests than ports.
func TestBatcherOverHTTP(t *testing.T) {
	fake := neutrontest.New(t)
	fake.TagOnCreate = true
	b := neutron.New(fake.Client(t)).Batching(1, 50, time.Minute, time.Millisecond)
	const n = 20
	var wg sync.WaitGroup
	portNames := make([]string, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := spec()
			s.Name, s.Tags = fmt.Sprintf("ns/pod-%d", i), []string{names.ClusterTag("c"), names.PodTag(fmt.Sprint(i))}
			p, err := b.CreatePort(context.Background(), s)
			if err != nil {
				t.Error(err)
				return
			}
			if names.PodUIDOf(p.Tags) != fmt.Sprint(i) {
				t.Errorf("pod %d got port %s tagged %v", i, p.ID, p.Tags)
			}
			portNames[i] = p.Name
		}()
	}
	wg.Wait()
	if fake.Count("ports") != n {
		t.Fatalf("%d ports, want %d", fake.Count("ports"), n)
	}
	if fake.Writes() >= n {
		t.Errorf("%d requests for %d ports: nothing was batched", fake.Writes(), n)
	}
	for i, name := range portNames {
		if name != fmt.Sprintf("ns/pod-%d", i) {
			t.Errorf("pod %d got the port named %q", i, name)
		}
	}
}

// BindPort writes at the revision given: a port changed since is refused
// (412), and a port gone is no error.
func TestBindPortAtRevision(t *testing.T) {
	fn := neutrontest.New(t)
	id := fn.Add("ports", neutrontest.Object{"binding:host_id": "", "binding:vif_type": "unbound", "revision_number": 4})
	c := neutron.New(fn.Client(t))
	if err := c.BindPort(context.Background(), id, "n1", 3); !neutron.PreconditionFailed(err) {
		t.Fatalf("bind at a stale revision: %v, want 412", err)
	}
	if err := c.BindPort(context.Background(), id, "n1", 4); err != nil {
		t.Fatal(err)
	}
	if got := fn.Get("ports", id); got["binding:host_id"] != "n1" || got["binding:vif_type"] != "ovs" {
		t.Errorf("after binding: host %v, vif_type %v", got["binding:host_id"], got["binding:vif_type"])
	}
	if err := c.BindPort(context.Background(), "gone", "n1", 1); err != nil {
		t.Errorf("bind a port gone: %v", err)
	}
}
