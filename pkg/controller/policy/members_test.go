package policy

import (
	"reflect"
	"sort"
	"testing"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestPeerMatches(t *testing.T) {
	web := &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}
	prodExpr := &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "env", Operator: metav1.LabelSelectorOpIn, Values: []string{"prod", "stage"}}}}
	pod := Pod{Namespace: "shop", Labels: map[string]string{"app": "web"}}
	for _, tc := range []struct {
		name  string
		peer  Peer
		pod   Pod
		nsLab map[string]string
		want  bool
	}{
		{"pod selector, own namespace", Peer{Namespace: "shop", Pods: web}, pod, nil, true},
		{"pod selector, other namespace", Peer{Namespace: "blog", Pods: web}, pod, nil, false},
		{"namespace expression matches", Peer{Namespaces: prodExpr}, pod, map[string]string{"env": "stage"}, true},
		{"namespace expression does not", Peer{Namespaces: prodExpr}, pod, map[string]string{"env": "dev"}, false},
		{"both: AND", Peer{Namespaces: prodExpr, Pods: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}}, pod, map[string]string{"env": "prod"}, false},
		{"all namespaces, all pods", Peer{Namespaces: &metav1.LabelSelector{}}, pod, nil, true},
		{"invalid selector matches nothing", Peer{Namespace: "shop", Pods: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "a", Operator: "Bogus"}}}}, pod, nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.peer.Matches(tc.pod, tc.nsLab); got != tc.want {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func TestGroups(t *testing.T) {
	np := func(name string, sel map[string]string, types ...networkingv1.PolicyType) *networkingv1.NetworkPolicy {
		return &networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name},
			Spec: networkingv1.NetworkPolicySpec{PodSelector: metav1.LabelSelector{MatchLabels: sel}, PolicyTypes: types}}
	}
	all := []*networkingv1.NetworkPolicy{
		np("deny-in", nil),
		np("web-out", map[string]string{"app": "web"}, "Egress"),
		np("db", map[string]string{"app": "db"}, "Ingress", "Egress"),
	}
	groupOf := func(p *networkingv1.NetworkPolicy) string { return "sg-" + p.Name }
	for _, tc := range []struct {
		name string
		pod  Pod
		want []string
	}{
		{"web: ingress by one, egress by another", Pod{"shop", map[string]string{"app": "web"}}, []string{"sg-deny-in", "sg-web-out"}},
		{"other: ingress isolated, egress open", Pod{"shop", map[string]string{"app": "x"}}, []string{"open-egress", "sg-deny-in"}},
		{"other namespace: open both ways", Pod{"blog", map[string]string{"app": "web"}}, []string{"open-egress", "open-ingress"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Groups(tc.pod, all, groupOf, "open-ingress", "open-egress")
			sort.Strings(got)
			if err != nil || !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %v %v, want %v", got, err, tc.want)
			}
		})
	}
	got, err := Groups(Pod{"shop", nil}, all, func(*networkingv1.NetworkPolicy) string { return "" }, "oi", "oe")
	if err == nil {
		t.Fatal("a selecting policy without its group must hold a new pod back")
	}
	if !reflect.DeepEqual(got, []string{"oe"}) {
		t.Fatalf("not ready: groups %v, want only the open egress group (ingress isolated, nothing admitted)", got)
	}
}
