package cleanup

import (
	"context"
	"testing"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	kuryrv1 "github.com/kuryr-k8s/kuryr/api/v1"
	"github.com/kuryr-k8s/kuryr/pkg/neutron"
	"github.com/kuryr-k8s/kuryr/pkg/neutron/neutrontest"
)

type forgotten map[string]string

func (f forgotten) ForgetPort(uid, id string) { f[uid] = id }

func TestSweepDeletesOnlyOrphans(t *testing.T) {
	fn := neutrontest.New(t)
	tag := neutron.ClusterTag("c1")
	live := fn.Add("ports", neutrontest.Object{"tags": []string{tag, neutron.PodTag("live")}})
	dead := fn.Add("ports", neutrontest.Object{"tags": []string{tag, neutron.PodTag("dead")}})
	other := fn.Add("ports", neutrontest.Object{"tags": []string{neutron.ClusterTag("another-cluster"), neutron.PodTag("dead")}})
	net := fn.Add("networks", neutrontest.Object{"tags": []string{tag, neutron.NamespaceTag("gone")}, "subnets": []string{}})

	s := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(s)
	_ = kuryrv1.AddToScheme(s)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "live"}}
	f := forgotten{}
	sw := &Sweeper{Client: fake.NewClientBuilder().WithScheme(s).WithObjects(pod).Build(),
		Neutron: neutron.New(fn.Client(t)), Ledger: f, Cluster: "c1", Router: "r"}
	if err := sw.Sweep(context.Background(), logr.Discard()); err != nil {
		t.Fatal(err)
	}
	if fn.Get("ports", live) == nil || fn.Get("ports", other) == nil {
		t.Error("deleted a port that is not an orphan of this cluster")
	}
	if fn.Get("ports", dead) != nil || fn.Get("networks", net) != nil {
		t.Error("left an orphan")
	}
	if f["dead"] != dead {
		t.Errorf("ledger not told: %v", f)
	}
	before := fn.Writes()
	if err := sw.Sweep(context.Background(), logr.Discard()); err != nil {
		t.Fatal(err)
	}
	if fn.Writes() != before {
		t.Error("a sweep with nothing orphaned wrote to Neutron")
	}
}
