package policy

import (
	"context"
	"testing"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	kuryrv1 "github.com/kuryr-k8s/kuryr/api/v1"
	"github.com/kuryr-k8s/kuryr/pkg/controller/kit/kittest"
	"github.com/kuryr-k8s/kuryr/pkg/neutron"
	"github.com/kuryr-k8s/kuryr/pkg/neutron/neutrontest"
)

// knpFor is a KuryrNetworkPolicy owned by a policy, admitting the peer
// key on TCP 8080 and egress to a prefix.
func knpFor(name, uid string, peers ...string) *kuryrv1.KuryrNetworkPolicy {
	ctl := true
	k := &kuryrv1.KuryrNetworkPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name, UID: types.UID("knp-" + uid),
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "networking.k8s.io/v1", Kind: "NetworkPolicy", Name: name,
			UID: types.UID(uid), Controller: &ctl}}},
		Spec: kuryrv1.KuryrNetworkPolicySpec{Ingress: true, Egress: true,
			Rules: []kuryrv1.PolicyRule{{Direction: Egress, CIDR: "10.20.0.0/16"}}}}
	for _, p := range peers {
		k.Spec.Peers = append(k.Spec.Peers, kuryrv1.PolicyPeer{Key: p, Namespace: "shop"})
		k.Spec.Rules = append(k.Spec.Rules, kuryrv1.PolicyRule{Direction: Ingress, Protocol: "tcp", PortMin: 8080, PortMax: 8080, Peer: p})
	}
	return k
}

func newGroupEnv(t *testing.T, objs ...client.Object) (*GroupReconciler, *neutrontest.Fake) {
	t.Helper()
	s := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(s)
	_ = kuryrv1.AddToScheme(s)
	_ = networkingv1.AddToScheme(s)
	cl := fake.NewClientBuilder().WithScheme(s).WithObjects(objs...).WithStatusSubresource(&kuryrv1.KuryrNetworkPolicy{}).Build()
	f := neutrontest.New(t)
	return &GroupReconciler{Client: cl, Neutron: neutron.New(f.Client(t)), Recorder: kittest.None{}, Locks: &PeerLocks{},
		Settings: Settings{Cluster: "c1", ProjectID: "p"}}, f
}

func reconcileKNP(t *testing.T, r *GroupReconciler, name string) ctrl.Result {
	t.Helper()
	res, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: types.NamespacedName{Namespace: "shop", Name: name}})
	if err != nil {
		t.Fatalf("reconcile %s: %v", name, err)
	}
	return res
}

func getKNP(t *testing.T, r *GroupReconciler, name string) *kuryrv1.KuryrNetworkPolicy {
	t.Helper()
	var k kuryrv1.KuryrNetworkPolicy
	if err := r.Get(context.Background(), types.NamespacedName{Namespace: "shop", Name: name}, &k); err != nil {
		t.Fatal(err)
	}
	return &k
}

// TestGroupReconcilerApplies: a policy gets its group (without Neutron's
// default egress rules) and its peer's group, one rule per family naming
// it; a second reconcile (a restart) writes nothing; policies sharing a
// peer share its group, which goes with the last of them.
func TestGroupReconcilerApplies(t *testing.T) {
	r, f := newGroupEnv(t, knpFor("a", "uid-a", "web"), knpFor("b", "uid-b", "web"))
	reconcileKNP(t, r, "a")
	a := getKNP(t, r, "a")
	sg, err := r.Neutron.GetSecurityGroup(context.Background(), a.Status.SecurityGroupID)
	if err != nil {
		t.Fatal(err)
	}
	if len(sg.Rules) != 3 {
		t.Fatalf("rules %+v, want the egress prefix and the peer rule per family", sg.Rules)
	}
	peer := a.Status.PeerGroups["web"]
	for _, rule := range sg.Rules {
		if rule.Direction == Ingress && rule.RemoteGroup != peer {
			t.Fatalf("ingress rule %+v does not name the peer group %s", rule, peer)
		}
	}
	writes := f.Writes()
	reconcileKNP(t, r, "a")
	if got := f.Writes() - writes; got != 0 {
		t.Fatalf("a second reconcile made %d Neutron writes", got)
	}
	reconcileKNP(t, r, "b")
	if got := getKNP(t, r, "b").Status.PeerGroups["web"]; got != peer {
		t.Fatalf("policy b's peer group %s, want the shared %s", got, peer)
	}
	for _, name := range []string{"a", "b"} {
		k := getKNP(t, r, name)
		if err := r.Delete(context.Background(), k); err != nil {
			t.Fatal(err)
		}
		reconcileKNP(t, r, name)
		_, err := r.Neutron.GetSecurityGroup(context.Background(), peer)
		if gone := neutron.IsNotFound(err); gone != (name == "b") {
			t.Fatalf("after deleting %s: peer group gone %v", name, gone)
		}
	}
}

// TestGroupKeptWhileKuryrPortsNameIt: a deleted policy's group is not
// deleted while a KuryrPort's status names it (its port carries it, or an
// update of the port may be in flight), even though Neutron would allow
// it; once the status no longer names it, it goes.
func TestGroupKeptWhileKuryrPortsNameIt(t *testing.T) {
	r, _ := newGroupEnv(t, knpFor("a", "uid-a"))
	reconcileKNP(t, r, "a")
	group := getKNP(t, r, "a").Status.SecurityGroupID
	kp := &kuryrv1.KuryrPort{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web"},
		Status: kuryrv1.KuryrPortStatus{SecurityGroups: []string{group}}}
	ctx := context.Background()
	if err := r.Create(ctx, kp); err != nil {
		t.Fatal(err)
	}
	if err := r.Delete(ctx, getKNP(t, r, "a")); err != nil {
		t.Fatal(err)
	}
	if res := reconcileKNP(t, r, "a"); res.RequeueAfter == 0 {
		t.Fatal("finalized while a KuryrPort names the group")
	}
	if _, err := r.Neutron.GetSecurityGroup(ctx, group); err != nil {
		t.Fatalf("group deleted while a KuryrPort names it: %v", err)
	}
	kp.Status.SecurityGroups = nil
	if err := r.Update(ctx, kp); err != nil {
		t.Fatal(err)
	}
	reconcileKNP(t, r, "a")
	if _, err := r.Neutron.GetSecurityGroup(ctx, group); !neutron.IsNotFound(err) {
		t.Fatalf("group still there once no KuryrPort names it: %v", err)
	}
}
