package cleanup

import (
	"slices"
	"testing"
	"time"

	"github.com/kuryr-k8s/kuryr/pkg/names"
	"github.com/kuryr-k8s/kuryr/pkg/neutron"
)

func TestOrphanPolicyGroups(t *testing.T) {
	now := time.Now()
	old := now.Add(-time.Hour)
	policy := func(uid string) []string { return []string{names.ClusterTag("c"), names.PolicyTag(uid)} }
	peer := func(key string) []string { return []string{names.ClusterTag("c"), names.PeerTag(key)} }
	live := livePolicies{uids: map[string]bool{"np-live": true}, peers: map[string]bool{"peer-live": true}}
	groups := []neutron.SecurityGroup{
		{ID: "policy-kept", Tags: policy("np-live"), CreatedAt: old},
		{ID: "policy-orphan", Tags: policy("np-gone"), CreatedAt: old},
		{ID: "policy-young", Tags: policy("np-gone"), CreatedAt: now},
		{ID: "peer-kept", Tags: peer("peer-live"), CreatedAt: old},
		{ID: "peer-orphan", Tags: peer("peer-gone"), CreatedAt: old},
		{ID: "peer-young", Tags: peer("peer-gone"), CreatedAt: now},
		{ID: "open", Tags: policy("kuryr-open-ingress"), CreatedAt: old},
		{ID: "service-source", Tags: []string{names.ClusterTag("c"), names.ServiceTag("s")}, CreatedAt: old},
	}
	var got []string
	for _, g := range OrphanPolicyGroups(groups, live, Owners{Cutoff: now.Add(-MinAge)}) {
		got = append(got, g.ID)
	}
	if want := []string{"policy-orphan", "peer-orphan"}; !slices.Equal(got, want) {
		t.Fatalf("orphans %v, want %v", got, want)
	}
	// Uninstall: nothing is alive, nothing in flight: every group of
	// policies and peers, the shared open groups and young ones included.
	got = nil
	for _, g := range OrphanPolicyGroups(groups, livePolicies{}, Owners{Uninstall: true}) {
		got = append(got, g.ID)
	}
	if want := []string{"policy-kept", "policy-orphan", "policy-young", "peer-kept", "peer-orphan", "peer-young", "open"}; !slices.Equal(got, want) {
		t.Fatalf("uninstall: orphans %v, want %v", got, want)
	}
}

// TestOrphanAddressPeers: only the cluster's own peer address groups whose
// peer no live policy names, and not young ones, are orphans (another
// cluster's, the probe's and a user's are not).
func TestOrphanAddressPeers(t *testing.T) {
	now := time.Now()
	old := now.Add(-time.Hour)
	mine := names.PeerAddressGroupDescription("c")
	live := livePolicies{peers: map[string]bool{"live": true, "sg-kind": true}, addressPeers: map[string]bool{"live": true},
		heldAddressGroups: map[string]bool{"held": true}}
	ags := []neutron.AddressGroup{
		{ID: "kept", Name: names.PeerGroupName("live"), Description: mine, CreatedAt: old},
		{ID: "orphan", Name: names.PeerGroupName("gone"), Description: mine, CreatedAt: old},
		{ID: "left-by-a-switch", Name: names.PeerGroupName("sg-kind"), Description: mine, CreatedAt: old},
		{ID: "held", Name: names.PeerGroupName("sg-kind"), Description: mine, CreatedAt: old},
		{ID: "young", Name: names.PeerGroupName("gone"), Description: mine, CreatedAt: now},
		{ID: "other-cluster", Name: names.PeerGroupName("gone"), Description: names.PeerAddressGroupDescription("d"), CreatedAt: old},
		{ID: "probe", Name: names.AddressGroupProbeName, Description: mine, CreatedAt: old},
		{ID: "users", Name: "office", CreatedAt: old},
		{ID: "no-creation-time", Name: names.PeerGroupName("gone"), Description: mine},
	}
	got := OrphanAddressPeers(ags, "c", live, Owners{Cutoff: now.Add(-MinAge)})
	if len(got) != 2 || got["orphan"] != "gone" || got["left-by-a-switch"] != "sg-kind" {
		t.Errorf("orphans %v, want orphan (peer gone) and left-by-a-switch (its policy's peers are security groups)", got)
	}
}
