package kuryrnetwork

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	kuryrv1 "github.com/kuryr-k8s/kuryr/api/v1"
)

// Every node gets one KuryrNetwork in the controller's namespace, owned by
// the node; reconciling again changes nothing, and a node being deleted
// gets none.
func TestNodesGetKuryrNetworks(t *testing.T) {
	now := metav1.NewTime(time.Now())
	tests := []struct {
		name string
		node *corev1.Node
		want bool
	}{
		{"a node", &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "worker-1", UID: "uid-1"}}, true},
		{"a node being deleted", &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "worker-2", UID: "uid-2",
			DeletionTimestamp: &now, Finalizers: []string{"test"}}}, false},
		{"a node gone", nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := fake.NewClientBuilder().WithScheme(scheme())
			name := "worker-gone"
			if tt.node != nil {
				b, name = b.WithObjects(tt.node), tt.node.Name
			}
			r := &Nodes{Client: b.Build(), Namespace: "kube-system", ProjectID: "p"}
			for i := 0; i < 2; i++ {
				if _, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: types.NamespacedName{Name: name}}); err != nil {
					t.Fatal(err)
				}
			}
			var kns kuryrv1.KuryrNetworkList
			if err := r.List(context.Background(), &kns); err != nil {
				t.Fatal(err)
			}
			if !tt.want {
				if len(kns.Items) != 0 {
					t.Errorf("KuryrNetworks %v, want none", kns.Items)
				}
				return
			}
			if len(kns.Items) != 1 {
				t.Fatalf("%d KuryrNetworks, want 1", len(kns.Items))
			}
			kn := kns.Items[0]
			owner := metav1.GetControllerOf(&kn)
			if kn.Namespace != "kube-system" || kn.Name != "node-worker-1" || kn.Spec.NodeName != "worker-1" || kn.Spec.NsName != "" ||
				kn.Spec.ProjectID != "p" || len(kn.Finalizers) != 1 || owner == nil || owner.Kind != "Node" || owner.UID != "uid-1" {
				t.Errorf("KuryrNetwork %s/%s spec %+v finalizers %v owner %+v", kn.Namespace, kn.Name, kn.Spec, kn.Finalizers, owner)
			}
		})
	}
}

// An existing KuryrNetwork (of an earlier node of the same name, which the
// garbage collector removes) is left alone.
func TestNodesLeaveAnExistingKuryrNetwork(t *testing.T) {
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "worker-1", UID: "new"}}
	old := ForNode(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "worker-1", UID: "old"}}, "kube-system", "p")
	r := &Nodes{Client: fake.NewClientBuilder().WithScheme(scheme()).WithObjects(node, old).Build(), Namespace: "kube-system", ProjectID: "p"}
	if _, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: types.NamespacedName{Name: "worker-1"}}); err != nil {
		t.Fatal(err)
	}
	var kn kuryrv1.KuryrNetwork
	if err := r.Get(context.Background(), client.ObjectKeyFromObject(old), &kn); err != nil {
		t.Fatal(err)
	}
	if metav1.GetControllerOf(&kn).UID != "old" {
		t.Errorf("owner %+v, want the old node's, untouched", metav1.GetControllerOf(&kn))
	}
}

// In node mode, the KuryrNetwork of a node that exists (a Node deleted and
// registered again under its name: the garbage collector deletes the old
// Node's KuryrNetwork) is released without touching its network, which
// the node's new KuryrNetwork adopts by name. In another mode, deleting it
// removes the network.
func TestLiveNodeKeepsItsNetwork(t *testing.T) {
	tests := []struct {
		name     string
		nodeMode bool
		wantKept bool
	}{
		{"node mode", true, true},
		{"another mode", false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "worker-1", UID: "new"}}
			old := ForNode(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "worker-1", UID: "old"}}, "kube-system", "p")
			e := newEnv(t, node, old)
			key := client.ObjectKeyFromObject(old)
			e.reconcile(t, key)
			before := e.get(t, key).Status.NetID
			e.r.Settings.Nodes = tt.nodeMode
			if err := e.c.Delete(context.Background(), old); err != nil {
				t.Fatal(err)
			}
			e.reconcile(t, key)
			if kept := e.fake.Get("networks", before) != nil; kept != tt.wantKept {
				t.Fatalf("network kept %v, want %v", kept, tt.wantKept)
			}
			if !tt.wantKept {
				return
			}
			nodes := &Nodes{Client: e.c, Namespace: "kube-system", ProjectID: "p"}
			if _, err := nodes.Reconcile(context.Background(), ctrl.Request{NamespacedName: types.NamespacedName{Name: "worker-1"}}); err != nil {
				t.Fatal(err)
			}
			e.reconcile(t, key)
			got := e.get(t, key)
			if got.Status.NetID != before || metav1.GetControllerOf(got).UID != "new" || e.fake.Requests["POST networks"] != 1 {
				t.Errorf("network %s (was %s), owner %v, %d network creates: want the same network adopted by the new node's KuryrNetwork",
					got.Status.NetID, before, metav1.GetControllerOf(got).UID, e.fake.Requests["POST networks"])
			}
		})
	}
}
