package cleanup

import (
	"testing"
	"time"

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
