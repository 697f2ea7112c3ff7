package cleanup

import (
	"maps"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	kuryrv1 "github.com/kuryr-k8s/kuryr/api/v1"
	"github.com/kuryr-k8s/kuryr/pkg/names"
	"github.com/kuryr-k8s/kuryr/pkg/neutron"
	"github.com/kuryr-k8s/kuryr/pkg/octavia"
)

func TestOrphanLoadBalancersAndFloatingIPs(t *testing.T) {
	now := time.Now()
	old := now.Add(-time.Hour)
	tags := func(uid string) []string { return []string{names.ClusterTag("c"), names.ServiceTag(uid)} }
	o := Owners{Services: map[string]bool{"live": true}, Cutoff: now.Add(-MinAge)}
	lbs := []octavia.LoadBalancer{
		{ID: "kept", Tags: tags("live"), CreatedAt: old},
		{ID: "orphan", Tags: tags("gone"), CreatedAt: old},
		{ID: "young", Tags: tags("gone"), CreatedAt: now},
		{ID: "not-a-service", Tags: []string{names.ClusterTag("c")}, CreatedAt: old},
	}
	if got := OrphanLoadBalancers(lbs, o); len(got) != 1 || got[0].ID != "orphan" {
		t.Fatalf("orphan load balancers %+v", got)
	}
	fips := []neutron.FloatingIP{
		{ID: "kept", Tags: tags("live"), CreatedAt: old},
		{ID: "orphan", Tags: tags("gone"), CreatedAt: old},
		{ID: "young", Tags: tags("gone"), CreatedAt: now},
	}
	if got := OrphanFloatingIPs(fips, o); len(got) != 1 || got[0].ID != "orphan" {
		t.Fatalf("orphan floating IPs %+v", got)
	}
}

// TestServiceOwners: a Service owns its load balancer through its
// KuryrLoadBalancer, or, before that exists, by getting one at all;
// a headless or ExternalName Service owns none.
func TestServiceOwners(t *testing.T) {
	klbs := []kuryrv1.KuryrLoadBalancer{{ObjectMeta: metav1.ObjectMeta{OwnerReferences: []metav1.OwnerReference{{UID: "with-klb"}}}}}
	svc := func(uid, clusterIP string, typ corev1.ServiceType) corev1.Service {
		return corev1.Service{ObjectMeta: metav1.ObjectMeta{UID: types.UID(uid)}, Spec: corev1.ServiceSpec{ClusterIP: clusterIP, Type: typ}}
	}
	got := serviceOwners(klbs, []corev1.Service{svc("adopted", "10.96.0.10", corev1.ServiceTypeClusterIP),
		svc("headless", corev1.ClusterIPNone, corev1.ServiceTypeClusterIP), svc("dns", "", corev1.ServiceTypeExternalName)})
	want := map[string]bool{"with-klb": true, "adopted": true}
	if !maps.Equal(got, want) {
		t.Errorf("owners %v, want %v", got, want)
	}
}
