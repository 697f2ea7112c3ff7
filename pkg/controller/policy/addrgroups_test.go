package policy

import (
	"context"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kuryrv1 "github.com/kuryr-k8s/kuryr/api/v1"
)

// mode is a PeerMode with a fixed answer.
type mode struct{ use, decided bool }

func (m mode) AddressGroups() (bool, bool) { return m.use, m.decided }

// podWithPort is a pod of namespace shop with labels and its KuryrPort at
// ip.
func podWithPort(name, ip string, lbl map[string]string) []client.Object {
	uid := types.UID("uid-" + name)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name, UID: uid, Labels: lbl}}
	kp := &kuryrv1.KuryrPort{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name},
		Spec: kuryrv1.KuryrPortSpec{PodUID: string(uid)},
		Status: kuryrv1.KuryrPortStatus{VIFs: map[string]kuryrv1.VIF{"eth0": {Default: true,
			IPs: []kuryrv1.IPAddress{{Address: ip + "/24"}}}}}}
	return []client.Object{pod, kp}
}

func shopNamespace() client.Object {
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop"}}
}

// knpWithPeer is knpFor with a peer selecting role=client pods.
func knpWithPeer(name, uid string) *kuryrv1.KuryrNetworkPolicy {
	k := knpFor(name, uid, "clients")
	k.Spec.Peers[0].PodSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"role": "client"}}
	return k
}

// TestAddressGroupPeers: where address groups are enforced, a peer is an
// address group holding exactly its pods' addresses (not the others'),
// the rules name it as their remote address group, and a pod leaving the
// peer is one removal; a second reconcile writes nothing.
func TestAddressGroupPeers(t *testing.T) {
	objs := []client.Object{shopNamespace(), knpWithPeer("a", "uid-a")}
	objs = append(objs, podWithPort("cl-0", "10.0.0.5", map[string]string{"role": "client"})...)
	objs = append(objs, podWithPort("other", "10.0.0.6", nil)...)
	r, f := newGroupEnv(t, objs...)
	r.Mode = mode{use: true, decided: true}
	ctx := context.Background()
	reconcileKNP(t, r, "a")
	a := getKNP(t, r, "a")
	ag := a.Status.PeerAddressGroups["clients"]
	if ag == "" || len(a.Status.PeerGroups) != 0 {
		t.Fatalf("peer address groups %v, peer groups %v: want an address group only", a.Status.PeerAddressGroups, a.Status.PeerGroups)
	}
	if got := f.AddressGroupAddresses(ag); !slices.Equal(got, []string{"10.0.0.5/32"}) {
		t.Errorf("address group holds %v, want [10.0.0.5/32]", got)
	}
	sg, err := r.Neutron.GetSecurityGroup(ctx, a.Status.SecurityGroupID)
	if err != nil {
		t.Fatal(err)
	}
	named := 0
	for _, rule := range sg.Rules {
		if rule.RemoteAddressGroup == ag {
			named++
		}
		if rule.RemoteGroup != "" {
			t.Errorf("rule %s names a remote security group", rule.Key())
		}
	}
	if named != 2 {
		t.Errorf("%d rules name the address group, want one per family", named)
	}
	writes := f.Writes()
	reconcileKNP(t, r, "a")
	if f.Writes() != writes {
		t.Errorf("a second reconcile wrote %d times", f.Writes()-writes)
	}

	var pod corev1.Pod
	if err := r.Get(ctx, types.NamespacedName{Namespace: "shop", Name: "cl-0"}, &pod); err != nil {
		t.Fatal(err)
	}
	pod.Labels = nil
	if err := r.Update(ctx, &pod); err != nil {
		t.Fatal(err)
	}
	reconcileKNP(t, r, "a")
	if got := f.AddressGroupAddresses(ag); len(got) != 0 {
		t.Errorf("after the pod left the peer the address group holds %v", got)
	}
}

// TestPeersChangeKind: a policy applied with security-group peers moves
// to address groups when the probe says so (the peer's security group is
// deleted once its rules are gone), and back; the policy's deletion takes
// its address groups away.
func TestPeersChangeKind(t *testing.T) {
	objs := []client.Object{shopNamespace(), knpWithPeer("a", "uid-a")}
	objs = append(objs, podWithPort("cl-0", "10.0.0.5", map[string]string{"role": "client"})...)
	r, f := newGroupEnv(t, objs...)
	r.Mode = mode{use: false, decided: true}
	reconcileKNP(t, r, "a")
	sgPeer := getKNP(t, r, "a").Status.PeerGroups["clients"]
	if sgPeer == "" {
		t.Fatal("no security-group peer")
	}
	// The member's port carries the peer group (the KuryrPort reconciler's
	// doing, from PeerGroupsOf).
	ctx := context.Background()
	var kp kuryrv1.KuryrPort
	if err := r.Get(ctx, types.NamespacedName{Namespace: "shop", Name: "cl-0"}, &kp); err != nil {
		t.Fatal(err)
	}
	kp.Status.SecurityGroups = []string{sgPeer}
	if err := r.Update(ctx, &kp); err != nil {
		t.Fatal(err)
	}
	r.Mode = mode{use: true, decided: true}
	if res := reconcileKNP(t, r, "a"); res.RequeueAfter == 0 {
		t.Error("the peer group still on a port: no retry")
	}
	a := getKNP(t, r, "a")
	if a.Status.PeerKind != kuryrv1.PeerKindAddressGroups || len(PeerGroupsOf(Pod{Namespace: "shop",
		Labels: map[string]string{"role": "client"}}, nil, []kuryrv1.KuryrNetworkPolicy{*a})) != 0 {
		t.Fatalf("rules name address groups (%q) but ports still get the peer group", a.Status.PeerKind)
	}
	kp.Status.SecurityGroups = nil // the KuryrPort reconciler takes it off
	if err := r.Update(ctx, &kp); err != nil {
		t.Fatal(err)
	}
	reconcileKNP(t, r, "a")
	a = getKNP(t, r, "a")
	if len(a.Status.PeerGroups) != 0 || a.Status.PeerAddressGroups["clients"] == "" {
		t.Fatalf("after the switch: peer groups %v, address groups %v", a.Status.PeerGroups, a.Status.PeerAddressGroups)
	}
	if f.Get("security-groups", sgPeer) != nil {
		t.Errorf("the peer's security group %s is left", sgPeer)
	}
	ag := a.Status.PeerAddressGroups["clients"]
	r.Mode = mode{use: false, decided: true}
	reconcileKNP(t, r, "a")
	if f.AddressGroupAddresses(ag) != nil {
		t.Errorf("the peer's address group %s is left after the switch back", ag)
	}
	r.Mode = mode{use: true, decided: true}
	reconcileKNP(t, r, "a")
	ag = getKNP(t, r, "a").Status.PeerAddressGroups["clients"]
	if err := r.Delete(ctx, getKNP(t, r, "a")); err != nil {
		t.Fatal(err)
	}
	reconcileKNP(t, r, "a")
	if f.AddressGroupAddresses(ag) != nil || f.Count("address-groups") != 0 {
		t.Errorf("the deleted policy's address group %s is left", ag)
	}
}

// TestUndecidedModeKeepsWhatIsApplied: until the probe answers, a policy
// keeps the kind its status shows, and a new one gets security groups.
func TestUndecidedModeKeepsWhatIsApplied(t *testing.T) {
	applied := knpWithPeer("a", "uid-a")
	applied.Status.PeerAddressGroups = map[string]string{"clients": "ag-x"}
	applied.Status.PeerKind = kuryrv1.PeerKindAddressGroups
	r, _ := newGroupEnv(t)
	r.Mode = mode{}
	if !r.addressMode(applied) {
		t.Error("applied with address groups: moved to security groups before the probe answered")
	}
	if r.addressMode(knpWithPeer("b", "uid-b")) {
		t.Error("a new policy: address groups before the probe answered")
	}
}

// TestAddressGateTakesAnAddressOutOfForeignPeers: a port whose address is
// still in the group of a peer its new pod is not one of loses it there
// before the pod gets it; the group of a peer the pod is one of keeps it.
func TestAddressGateTakesAnAddressOutOfForeignPeers(t *testing.T) {
	objs := []client.Object{shopNamespace(), knpWithPeer("a", "uid-a")}
	objs = append(objs, podWithPort("cl-0", "10.0.0.5", map[string]string{"role": "client"})...)
	r, f := newGroupEnv(t, objs...)
	r.Mode = mode{use: true, decided: true}
	reconcileKNP(t, r, "a")
	ag := getKNP(t, r, "a").Status.PeerAddressGroups["clients"]
	gate := AddressGate{Reader: r.Client, Neutron: r.Neutron.(gateAPI), Locks: r.Locks, Cluster: "c1"}
	ctx := context.Background()
	newPod := podWithPort("new", "10.0.0.5", nil)
	if err := r.Create(ctx, newPod[0]); err != nil {
		t.Fatal(err)
	}
	member := &kuryrv1.KuryrPort{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "cl-0"}, Spec: kuryrv1.KuryrPortSpec{PodUID: "uid-cl-0"}}
	if err := gate.ReleaseAddresses(ctx, member, []string{"10.0.0.5/32"}); err != nil {
		t.Fatal(err)
	}
	if got := f.AddressGroupAddresses(ag); !slices.Equal(got, []string{"10.0.0.5/32"}) {
		t.Errorf("a member's own address was taken out: %v", got)
	}
	stranger := newPod[1].(*kuryrv1.KuryrPort)
	if err := gate.ReleaseAddresses(ctx, stranger, []string{"10.0.0.5/32"}); err != nil {
		t.Fatal(err)
	}
	if got := f.AddressGroupAddresses(ag); len(got) != 0 {
		t.Errorf("the address stays in a peer its new pod is not one of: %v", got)
	}
	// A port going back to a pool or away: out of every peer.
	reconcileKNP(t, r, "a")
	if got := f.AddressGroupAddresses(ag); len(got) != 1 {
		t.Fatalf("the member's address is not back: %v", got)
	}
	if err := gate.ForgetAddresses(ctx, []string{"10.0.0.5/32"}); err != nil {
		t.Fatal(err)
	}
	if got := f.AddressGroupAddresses(ag); len(got) != 0 {
		t.Errorf("a forgotten address stays: %v", got)
	}
}
