package nested

import (
	"context"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"

	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	kuryrv1 "github.com/kuryr-k8s/kuryr/api/v1"
	"github.com/kuryr-k8s/kuryr/pkg/neutron"
	"github.com/kuryr-k8s/kuryr/pkg/neutron/neutrontest"
)

func TestPlanVLANs(t *testing.T) {
	sub := func(port string, id int) neutron.Subport {
		return neutron.Subport{PortID: port, SegmentationType: "vlan", SegmentationID: id}
	}
	full := make([]neutron.Subport, 0, maxVLAN)
	for id := minVLAN; id <= maxVLAN; id++ {
		full = append(full, sub(fmt.Sprint("p", id), id))
	}
	for _, tt := range []struct {
		name    string
		have    []neutron.Subport
		ports   []string
		want    map[string]int
		added   int
		wantErr bool
	}{
		{name: "empty trunk", ports: []string{"a", "b"}, want: map[string]int{"a": 1, "b": 2}, added: 2},
		{name: "after the highest in use, not a hole just freed", have: []neutron.Subport{sub("x", 1), sub("y", 7)},
			ports: []string{"a"}, want: map[string]int{"a": 8}, added: 1},
		{name: "already attached keeps its id", have: []neutron.Subport{sub("a", 42)}, ports: []string{"a", "b"},
			want: map[string]int{"a": 42, "b": 43}, added: 1},
		{name: "wraps around", have: []neutron.Subport{sub("x", 1), sub("y", maxVLAN)}, ports: []string{"a"},
			want: map[string]int{"a": 2}, added: 1},
		{name: "none left", have: full, ports: []string{"a"}, wantErr: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, missing, err := planVLANs(tt.have, tt.ports)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err %v, want error %v", err, tt.wantErr)
			}
			if tt.wantErr {
				return
			}
			if fmt.Sprint(got) != fmt.Sprint(tt.want) || len(missing) != tt.added {
				t.Errorf("ids %v (%d to add), want %v (%d)", got, len(missing), tt.want, tt.added)
			}
		})
	}
}

// vm makes a VM node: a Node with an InternalIP, its port on the worker
// subnet, and the trunk of which it is the parent.
func vm(t *testing.T, f *neutrontest.Fake, name, ip string) (*corev1.Node, string, string) {
	t.Helper()
	port := f.Add("ports", neutrontest.Object{"status": "ACTIVE", "mac_address": "fa:16:3e:00:00:01",
		"fixed_ips": []neutrontest.Object{{"subnet_id": "workers", "ip_address": ip}}})
	trunk := f.Add("trunks", neutrontest.Object{"port_id": port, "sub_ports": []neutrontest.Object{}})
	f.Set("ports", port, "trunk_details", neutrontest.Object{"trunk_id": trunk, "sub_ports": []neutrontest.Object{}})
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name},
		Status: corev1.NodeStatus{Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: ip}}}}
	return n, port, trunk
}

func placer(t *testing.T, f *neutrontest.Fake, mode string, nodes ...*corev1.Node) *Placer {
	c := neutron.New(f.Client(t))
	b := fake.NewClientBuilder()
	for _, n := range nodes {
		b = b.WithObjects(n)
	}
	cl := b.Build()
	return &Placer{Modes: &Modes{Nodes: cl, Default: mode}, Parents: &Parents{Neutron: c, Nodes: cl, Subnets: []string{"workers"}},
		Trunks: &Trunks{Neutron: c}, Pairs: &Pairs{Neutron: c, Attempts: 3}}
}

func podPort(f *neutrontest.Fake, ip string) neutron.Port {
	id := f.Add("ports", neutrontest.Object{"status": "DOWN"})
	var p neutron.Port
	p.ID, p.MACAddress = id, "fa:16:3e:10:00:"+ip[len(ip)-2:]
	p.FixedIPs = []ports.IP{{SubnetID: "pods", IPAddress: ip}}
	return p
}

// placeRetrying places as the work queue does: a refusal (another writer
// got there first too often) is tried again.
func placeRetrying(ctx context.Context, p *Placer, pods []neutron.Port) (at map[string]kuryrv1.NestedVIF, err error) {
	for range 20 {
		if at, err = p.Place(ctx, "vm-1", pods); err == nil {
			return at, nil
		}
	}
	return nil, err
}

// podPorts are n pods' ports, 10.10.0.10 on.
func podPorts(f *neutrontest.Fake, n int) []neutron.Port {
	out := make([]neutron.Port, n)
	for i := range out {
		out[i] = podPort(f, fmt.Sprintf("10.10.0.%d", 10+i))
	}
	return out
}

// placeAtOnce places each pod alone, all at once, by the placers in turn
// (controllers knowing nothing of each other), and returns where.
func placeAtOnce(t *testing.T, pods []neutron.Port, placers ...*Placer) []kuryrv1.NestedVIF {
	t.Helper()
	var wg sync.WaitGroup
	placed := make([]kuryrv1.NestedVIF, len(pods))
	for i := range pods {
		wg.Add(1)
		go func() {
			defer wg.Done()
			at, err := placeRetrying(context.Background(), placers[i%len(placers)], pods[i:i+1])
			if err != nil {
				t.Error(err)
				return
			}
			placed[i] = at[pods[i].ID]
		}()
	}
	wg.Wait()
	return placed
}

// TestVLANsConcurrentAndRestarted: pods placed at once on one VM, by one
// controller and by a second one (a restarted or concurrent leader, which
// knows nothing of the first: Neutron refuses its stale choices, and it
// reads again), all get distinct VLAN ids; placing a port
// again (an attach whose answer was lost) writes nothing.
func TestVLANsConcurrentAndRestarted(t *testing.T) {
	f := neutrontest.New(t)
	node, parent, trunk := vm(t, f, "vm-1", "10.20.0.5")
	first, second := placer(t, f, ModeVLAN, node), placer(t, f, ModeVLAN, node)
	ctx := context.Background()
	pods := podPorts(f, 20)
	placed := placeAtOnce(t, pods, first, second)
	seen := map[int]bool{}
	for i, at := range placed {
		if at.Mode != kuryrv1.NestedVLAN || at.TrunkID != trunk || at.ParentPortID != parent || seen[at.VLANID] {
			t.Errorf("pod %d placed %+v (VLAN ids so far %v)", i, at, seen)
		}
		seen[at.VLANID] = true
	}
	writes := f.Writes()
	again, err := placer(t, f, ModeVLAN, node).Place(ctx, "vm-1", pods[:1])
	if err != nil || again[pods[0].ID] != placed[0] || f.Writes() != writes {
		t.Errorf("placed again: %+v, %v, %d writes; want %+v and none", again, err, f.Writes()-writes, placed[0])
	}
	if err := first.Unplace(ctx, "vm-1", &placed[0], pods[0]); err != nil {
		t.Fatal(err)
	}
	if subs, _ := neutron.New(f.Client(t)).Subports(ctx, trunk); len(subs) != 19 {
		t.Errorf("%d subports after one unplaced, want 19", len(subs))
	}
}

// TestPairsConcurrent: two controllers adding pairs to one VM port at once
// lose none (a stale revision is refused and read again); unplacing takes
// off only the pod's own pair.
func TestPairsConcurrent(t *testing.T) {
	f := neutrontest.New(t)
	node, parent, _ := vm(t, f, "vm-1", "10.20.0.5")
	a, b := placer(t, f, ModeMacvlan, node), placer(t, f, ModeMacvlan, node)
	ctx := context.Background()
	pods := podPorts(f, 10)
	placeAtOnce(t, pods, a, b)
	got, _ := neutron.New(f.Client(t)).GetParentPort(ctx, parent)
	if len(got.AllowedAddressPairs) != len(pods) {
		t.Fatalf("%d pairs after %d pods placed: %+v", len(got.AllowedAddressPairs), len(pods), got.AllowedAddressPairs)
	}
	if err := a.Unplace(ctx, "vm-1", nil, pods[3]); err != nil {
		t.Fatal(err)
	}
	got, _ = neutron.New(f.Client(t)).GetParentPort(ctx, parent)
	for _, p := range got.AllowedAddressPairs {
		if p.IPAddress == "10.10.0.13" {
			t.Errorf("pair of the unplaced pod left: %+v", got.AllowedAddressPairs)
		}
	}
	if len(got.AllowedAddressPairs) != len(pods)-1 {
		t.Errorf("%d pairs left, want %d", len(got.AllowedAddressPairs), len(pods)-1)
	}
}

// TestLateUnplaceKeepsNewPair: a pod's port deleted, its address given to
// another pod's port on the same VM, then the first pod's unplacing retried
// (its answer was lost): the new pod's pair stays.
func TestLateUnplaceKeepsNewPair(t *testing.T) {
	f := neutrontest.New(t)
	node, parent, _ := vm(t, f, "vm-1", "10.20.0.5")
	pl := placer(t, f, ModeMacvlan, node)
	ctx := context.Background()
	old := podPort(f, "10.10.0.40")
	at := placeAtOnce(t, []neutron.Port{old}, pl)[0]
	if err := pl.Unplace(ctx, "vm-1", &at, old); err != nil {
		t.Fatal(err)
	}
	reused := podPort(f, "10.10.0.40")
	placeAtOnce(t, []neutron.Port{reused}, pl)
	if err := pl.Unplace(ctx, "vm-1", &at, old); err != nil { // late, again
		t.Fatal(err)
	}
	got, _ := neutron.New(f.Client(t)).GetParentPort(ctx, parent)
	want := ports.AddressPair{IPAddress: "10.10.0.40", MACAddress: MacvlanMAC(reused.ID)}
	if len(got.AllowedAddressPairs) != 1 || got.AllowedAddressPairs[0] != want {
		t.Errorf("pairs %+v, want only the new pod's %+v", got.AllowedAddressPairs, want)
	}
}

// TestParents: a node's port is found by its InternalIP on the worker
// subnets; nested-vlan refuses a port without a trunk, saying how to make
// one; an address on no worker subnet is an error naming the option.
func TestParents(t *testing.T) {
	f := neutrontest.New(t)
	node, parent, _ := vm(t, f, "vm-1", "10.20.0.5")
	bare := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "vm-2"},
		Status: corev1.NodeStatus{Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.20.0.6"}}}}
	f.Add("ports", neutrontest.Object{"fixed_ips": []neutrontest.Object{{"subnet_id": "workers", "ip_address": "10.20.0.6"}}})
	lost := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "vm-3"},
		Status: corev1.NodeStatus{Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "192.0.2.1"}}}}
	p := placer(t, f, ModeVLAN, node, bare, lost)
	ctx := context.Background()
	if got, err := p.Parents.Of(ctx, "vm-1", true); err != nil || got.PortID != parent {
		t.Errorf("vm-1: %+v, %v", got, err)
	}
	if _, err := p.Parents.Of(ctx, "vm-2", true); err == nil || !strings.Contains(err.Error(), "trunk create") {
		t.Errorf("vm-2 without a trunk: %v", err)
	}
	if _, err := p.Parents.Of(ctx, "vm-3", true); err == nil || !strings.Contains(err.Error(), "worker_nodes_subnets") {
		t.Errorf("vm-3 off the worker subnets: %v", err)
	}
}

// TestModes: a node's label overrides the cluster's pod_vif_driver; a
// label naming no mode is an error; a node that is gone has the default.
func TestModes(t *testing.T) {
	label := func(name, v string) *corev1.Node {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{kuryrv1.PodVIFLabel: v}}}
	}
	plain := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "hv"}}
	m := &Modes{Nodes: fake.NewClientBuilder().WithObjects(plain, label("vm", ModeMacvlan), label("odd", "vlan")).Build(),
		Default: ModeNeutron}
	ctx := context.Background()
	for node, want := range map[string]string{"hv": ModeNeutron, "vm": ModeMacvlan, "gone": ModeNeutron} {
		if got, err := m.Of(ctx, node); err != nil || got != want {
			t.Errorf("%s: %q, %v; want %q", node, got, err, want)
		}
	}
	if _, err := m.Of(ctx, "odd"); err == nil || !strings.Contains(err.Error(), kuryrv1.PodVIFLabel) {
		t.Errorf("odd label: %v", err)
	}
}

// TestMacvlanMAC: a pod's macvlan MAC is unicast, locally administered,
// stable for its port and not another port's.
func TestMacvlanMAC(t *testing.T) {
	a, b := MacvlanMAC("port-a"), MacvlanMAC("port-b")
	mac, err := net.ParseMAC(a)
	if err != nil || mac[0]&1 != 0 || mac[0]&2 == 0 || a != MacvlanMAC("port-a") || a == b {
		t.Errorf("MacvlanMAC: %q (%v), %q", a, err, b)
	}
}

// TestMacvlanParents: the sweep reads the VM ports of nested-macvlan
// nodes only (a node's label, else the default), with their pairs; a
// node whose port is not found is left out.
func TestMacvlanParents(t *testing.T) {
	f := neutrontest.New(t)
	mv, mvPort, _ := vm(t, f, "vm-1", "10.20.0.5")
	vl, _, _ := vm(t, f, "vm-2", "10.20.0.6")
	vl.Labels = map[string]string{kuryrv1.PodVIFLabel: ModeVLAN}
	lost := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "vm-3"},
		Status: corev1.NodeStatus{Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.20.0.7"}}}}
	pl := placer(t, f, ModeMacvlan, mv, vl, lost)
	placeAtOnce(t, podPorts(f, 1), pl)
	got, err := pl.MacvlanParents(context.Background())
	if err != nil || len(got) != 1 || got[0].ID != mvPort || len(got[0].AllowedAddressPairs) != 1 {
		t.Fatalf("MacvlanParents = %+v, %v; want %s with its pair", got, err, mvPort)
	}
	if !IsMacvlanMAC(got[0].AllowedAddressPairs[0].MACAddress) || IsMacvlanMAC("fa:16:3e:00:00:01") {
		t.Errorf("kuryr's macvlan MACs not told from others: %+v", got[0].AllowedAddressPairs)
	}
}

// A nested-vlan node is filled at start-up; a nested-macvlan one is not.
func TestPoolableNode(t *testing.T) {
	for mode, want := range map[string]bool{ModeNeutron: true, ModeVLAN: true, ModeMacvlan: false, "typo": false} {
		n := &corev1.Node{}
		n.Labels = map[string]string{kuryrv1.PodVIFLabel: mode}
		if got := PoolableNode(n, ModeNeutron); got != want {
			t.Errorf("%s: poolable %v, want %v", mode, got, want)
		}
	}
}
