package cleanup

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/kuryr-k8s/kuryr/pkg/names"
	"github.com/kuryr-k8s/kuryr/pkg/neutron"
	"github.com/kuryr-k8s/kuryr/pkg/neutron/neutrontest"
)

func TestDryRunDeletesNothing(t *testing.T) {
	fn := neutrontest.New(t)
	tag := names.ClusterTag("c1")
	old := "2020-01-01T00:00:00Z"
	fn.Add("ports", neutrontest.Object{"tags": []string{tag, names.PodTag("live")}, "created_at": old})
	dead := fn.Add("ports", neutrontest.Object{"tags": []string{tag, names.PodTag("dead")}, "created_at": old})
	pooled := fn.Add("ports", neutrontest.Object{"tags": []string{tag, names.PoolTag("n1")}, "created_at": old})
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "live"}}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}
	sw := &Sweeper{Client: fake.NewClientBuilder().WithScheme(sweepScheme()).WithObjects(pod, node).Build(),
		Neutron: neutron.New(fn.Client(t)), Cluster: "c1"}
	tests := []struct {
		name  string
		pools bool
		want  []string
	}{
		{"pools off: pooled ports are orphans", false, []string{dead, pooled}},
		{"pools on: a live node's pooled port is not", true, []string{dead}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := fn.Writes()
			o, err := sw.DryRun(context.Background(), tt.pools)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, p := range o.Ports {
				got = append(got, p.ID)
			}
			if len(got) != len(tt.want) || o.Count() != len(tt.want) {
				t.Fatalf("orphans %v, want %v", got, tt.want)
			}
			for i := range got {
				if got[i] != tt.want[i] {
					t.Errorf("orphans %v, want %v", got, tt.want)
				}
			}
			if fn.Writes() != before {
				t.Error("a dry run wrote to Neutron")
			}
		})
	}
}
