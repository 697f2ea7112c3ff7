package policy

import (
	"reflect"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kuryrv1 "github.com/kuryr-k8s/kuryr/api/v1"
	"github.com/kuryr-k8s/kuryr/pkg/neutron"
)

func TestPeerGroupsOf(t *testing.T) {
	sel := func(k, v string) *metav1.LabelSelector {
		return &metav1.LabelSelector{MatchLabels: map[string]string{k: v}}
	}
	knp := func(peers map[string]kuryrv1.PolicyPeer, groups map[string]string) kuryrv1.KuryrNetworkPolicy {
		k := kuryrv1.KuryrNetworkPolicy{Status: kuryrv1.KuryrNetworkPolicyStatus{PeerGroups: groups}}
		for key, pp := range peers {
			pp.Key = key
			k.Spec.Peers = append(k.Spec.Peers, pp)
		}
		return k
	}
	deleting := knp(map[string]kuryrv1.PolicyPeer{"d": {Namespace: "shop", PodSelector: sel("app", "web")}}, map[string]string{"d": "sg-d"})
	deleting.DeletionTimestamp = &metav1.Time{Time: time.Now()}
	// Rules naming address groups: its (old) peer groups go off the ports.
	moved := knp(map[string]kuryrv1.PolicyPeer{"d": {Namespace: "shop", PodSelector: sel("app", "web")}}, map[string]string{"d": "sg-moved"})
	moved.Status.PeerKind = kuryrv1.PeerKindAddressGroups
	knps := []kuryrv1.KuryrNetworkPolicy{
		moved,
		knp(map[string]kuryrv1.PolicyPeer{
			"web":  {Namespace: "shop", PodSelector: sel("app", "web")},
			"db":   {Namespace: "shop", PodSelector: sel("app", "db")},
			"prod": {NamespaceSelector: sel("env", "prod")},
		}, map[string]string{"web": "sg-web", "db": "sg-db", "prod": "sg-prod"}),
		knp(map[string]kuryrv1.PolicyPeer{"web": {Namespace: "shop", PodSelector: sel("app", "web")}, "new": {Namespace: "shop"}},
			map[string]string{"web": "sg-web"}), // "new" has no group yet
		deleting,
	}
	for _, tc := range []struct {
		name     string
		pod      Pod
		nsLabels map[string]string
		want     []string
	}{
		{"member of a peer shared by two policies, and of a namespace peer", Pod{Namespace: "shop", Labels: map[string]string{"app": "web"}},
			map[string]string{"env": "prod"}, []string{"sg-web", "sg-prod", "sg-web"}},
		{"no peer of its labels", Pod{Namespace: "shop", Labels: map[string]string{"app": "cache"}}, nil, nil},
		{"another namespace", Pod{Namespace: "blog", Labels: map[string]string{"app": "web"}}, nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := PeerGroupsOf(tc.pod, tc.nsLabels, knps)
			if !reflect.DeepEqual(sortedCopy(got), sortedCopy(tc.want)) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func sortedCopy(s []string) []string {
	out := slices.Clone(s)
	slices.Sort(out)
	return out
}

func TestOpenRules(t *testing.T) {
	got := OpenRules(Ingress, []string{"10.10.0.0/16", "::/0", "0.0.0.0/0"})
	want := []neutron.Rule{
		{Direction: Ingress, EtherType: "IPv4", RemotePrefix: "10.10.0.0/16"},
		{Direction: Ingress, EtherType: "IPv6"},
		{Direction: Ingress, EtherType: "IPv4"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v, want %+v", got, want)
	}
}
