package kuryrnetwork

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	kuryrv1 "github.com/kuryr-k8s/kuryr/api/v1"
	"github.com/kuryr-k8s/kuryr/pkg/neutron"
	"github.com/kuryr-k8s/kuryr/pkg/neutron/neutrontest"
)

type noEvents struct{}

func (noEvents) Eventf(_, _ runtime.Object, _, _, _, _ string, _ ...any) {}

func TestNamespaceNetworkLifecycle(t *testing.T) {
	s := runtime.NewScheme()
	_ = kuryrv1.AddToScheme(s)
	kn := &kuryrv1.KuryrNetwork{
		ObjectMeta: metav1.ObjectMeta{Name: "shop", Namespace: "shop", Finalizers: []string{kuryrv1.KuryrNetworkFinalizer}},
		Spec:       kuryrv1.KuryrNetworkSpec{NsName: "shop", ProjectID: "p"},
	}
	c := fake.NewClientBuilder().WithScheme(s).WithObjects(kn).WithStatusSubresource(kn).Build()
	fn := neutrontest.New(t)
	r := &Reconciler{Client: c, Neutron: neutron.New(fn.Client(t)), Recorder: noEvents{},
		Settings: Settings{Cluster: "c1", Router: "router-1", SubnetPool: "pool-1"}}
	req := ctrl.Request{NamespacedName: types.NamespacedName{Namespace: "shop", Name: "shop"}}
	ctx := context.Background()
	for i := 0; i < 2; i++ { // the second pass must change nothing
		if _, err := r.Reconcile(ctx, req); err != nil {
			t.Fatal(err)
		}
	}
	var got kuryrv1.KuryrNetwork
	if err := c.Get(ctx, req.NamespacedName, &got); err != nil {
		t.Fatal(err)
	}
	if !got.Status.Ready() || got.Status.SubnetCIDR == "" {
		t.Fatalf("status %+v", got.Status)
	}
	net := fn.Get("networks", got.Status.NetID)
	if net["name"] != NetworkName("c1", "shop") || len(net["tags"].([]string)) != 2 {
		t.Errorf("network %v", net)
	}
	if fn.Count("networks") != 1 || fn.Count("subnets") != 1 || fn.Count("ports") != 1 {
		t.Errorf("networks %d subnets %d router ports %d", fn.Count("networks"), fn.Count("subnets"), fn.Count("ports"))
	}
	if err := c.Delete(ctx, &got); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Reconcile(ctx, req); err != nil {
		t.Fatal(err)
	}
	if fn.Count("networks") != 0 || fn.Count("ports") != 0 {
		t.Errorf("left behind: networks %d router ports %d", fn.Count("networks"), fn.Count("ports"))
	}
}
