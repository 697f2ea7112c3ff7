package cleanup

import (
	"context"
	"reflect"
	"slices"
	"testing"

	"github.com/go-logr/logr"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	kuryrv1 "github.com/kuryr-k8s/kuryr/api/v1"
	"github.com/kuryr-k8s/kuryr/pkg/controller/nested"
	"github.com/kuryr-k8s/kuryr/pkg/names"
	"github.com/kuryr-k8s/kuryr/pkg/neutron"
	"github.com/kuryr-k8s/kuryr/pkg/neutron/neutrontest"
)

func vmPort(id string, pairs ...ports.AddressPair) neutron.ParentPort {
	var p neutron.ParentPort
	p.ID, p.MACAddress, p.AllowedAddressPairs = id, "fa:16:3e:00:00:01", pairs
	return p
}

// TestOrphanPairs: only kuryr's pairs (its macvlan MAC range) that no
// cluster port and no KuryrPort owns are orphans; the VM's own MAC, a
// user's VIP and a pair whose port lives are kept.
func TestOrphanPairs(t *testing.T) {
	live, gone := nested.MacvlanMAC("live"), nested.MacvlanMAC("gone")
	vip := ports.AddressPair{IPAddress: "10.20.0.100", MACAddress: "fa:16:3e:00:00:01"}
	user := ports.AddressPair{IPAddress: "10.20.0.101", MACAddress: "02:42:ac:11:00:02"}
	for _, tc := range []struct {
		name    string
		parents []neutron.ParentPort
		ports   []neutron.Port
		owners  Owners
		want    map[string][]ports.AddressPair
	}{
		{"none", nil, nil, Owners{}, map[string][]ports.AddressPair{}},
		{"live pair kept", []neutron.ParentPort{vmPort("vm", ports.AddressPair{IPAddress: "10.20.0.7", MACAddress: live})},
			[]neutron.Port{{Port: ports.Port{ID: "live"}}}, Owners{}, map[string][]ports.AddressPair{}},
		{"pair of an untagged port its KuryrPort names kept",
			[]neutron.ParentPort{vmPort("vm", ports.AddressPair{IPAddress: "10.20.0.7", MACAddress: live})},
			nil, Owners{PortIDs: map[string]bool{"live": true}}, map[string][]ports.AddressPair{}},
		{"pair whose MAC a KuryrPort records kept",
			[]neutron.ParentPort{vmPort("vm", ports.AddressPair{IPAddress: "10.20.0.7", MACAddress: "0A:00:00:00:00:01"})},
			nil, Owners{VIFMACs: map[string]bool{"0a:00:00:00:00:01": true}}, map[string][]ports.AddressPair{}},
		{"gone pair orphaned, others kept",
			[]neutron.ParentPort{vmPort("vm", vip, user, ports.AddressPair{IPAddress: "10.20.0.7", MACAddress: live},
				ports.AddressPair{IPAddress: "10.20.0.8", MACAddress: gone})},
			[]neutron.Port{{Port: ports.Port{ID: "live"}}}, Owners{},
			map[string][]ports.AddressPair{"vm": {{IPAddress: "10.20.0.8", MACAddress: gone}}}},
	} {
		if got := OrphanPairs(tc.parents, tc.ports, tc.owners); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

// racingPairs is a VM port whose newest pod port is created while the
// sweep reads it, as a pod starts during a sweep.
type racingPairs struct {
	fn      *neutrontest.Fake
	parent  neutron.ParentPort
	removed map[string][]ports.AddressPair
}

func (r *racingPairs) MacvlanParents(context.Context) ([]neutron.ParentPort, error) {
	id := r.fn.Add("ports", neutrontest.Object{"tags": []string{names.ClusterTag("c1"), names.PodTag("new")}})
	p := r.parent
	p.AllowedAddressPairs = append(slices.Clone(p.AllowedAddressPairs),
		ports.AddressPair{IPAddress: "10.20.0.9", MACAddress: nested.MacvlanMAC(id)})
	return []neutron.ParentPort{p}, nil
}

func (r *racingPairs) RemovePairs(_ context.Context, parent string, pairs []ports.AddressPair) error {
	r.removed[parent] = append(r.removed[parent], pairs...)
	return nil
}

// TestSweepPairs: the pair of a port that is gone is taken off its VM
// port (a dry run only reports it); the VM ports are read before the cluster's ports are listed, so
// a pod port created meanwhile keeps its pair.
func TestSweepPairs(t *testing.T) {
	fn := neutrontest.New(t)
	live := fn.Add("ports", neutrontest.Object{"tags": []string{names.ClusterTag("c1"), names.PodTag("live")}})
	s := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(s)
	_ = kuryrv1.AddToScheme(s)
	orphan := ports.AddressPair{IPAddress: "10.20.0.8", MACAddress: nested.MacvlanMAC("deleted-port")}
	rp := &racingPairs{fn: fn, removed: map[string][]ports.AddressPair{},
		parent: vmPort("vm", ports.AddressPair{IPAddress: "10.20.0.7", MACAddress: nested.MacvlanMAC(live)}, orphan)}
	pods := &corev1.PodList{Items: []corev1.Pod{
		{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "ns", UID: "live"}},
		{ObjectMeta: metav1.ObjectMeta{Name: "b", Namespace: "ns", UID: "new"}}}}
	sw := &Sweeper{Client: fake.NewClientBuilder().WithScheme(s).WithLists(pods).Build(), Neutron: neutron.New(fn.Client(t)),
		Ledger: forgotten{}, Cluster: "c1", Router: "r", VMPairs: rp}
	// kubectl kuryr doctor's dry run reports the orphan and takes off nothing.
	o, err := sw.DryRun(context.Background(), false)
	if want := map[string][]ports.AddressPair{"vm": {orphan}}; err != nil || !reflect.DeepEqual(o.Pairs, want) ||
		o.PairCount() != 1 || len(rp.removed) != 0 {
		t.Fatalf("dry run: %v, pairs %v, removed %v; want %v reported and nothing removed", err, o.Pairs, rp.removed, want)
	}
	if err := sw.Sweep(context.Background(), logr.Discard()); err != nil {
		t.Fatal(err)
	}
	if want := map[string][]ports.AddressPair{"vm": {orphan}}; !reflect.DeepEqual(rp.removed, want) {
		t.Errorf("removed %v, want only %v", rp.removed, want)
	}
}
