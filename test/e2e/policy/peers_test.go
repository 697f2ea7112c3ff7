//go:build e2e

package policy

import (
	"slices"
	"strings"
	"testing"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestPeers: who a rule admits. A podSelector alone means pods of the
// policy's namespace; a namespaceSelector (by labels or by expressions)
// means every pod of the namespaces it selects; both in one peer mean the
// pods they both select; two peers mean the pods either selects; an empty
// namespaceSelector means every namespace. Egress peers select the same
// way.
func TestPeers(t *testing.T) {
	f := newFixture(t, "np-peers",
		map[string]map[string]string{"a": labels("team", "a"), "b": labels("team", "b"), "c": labels("team", "c")},
		podSpec{name: "srv-0", ns: "a", node: 0, labels: labels("role", "server"), server: true},
		podSpec{name: "cl-a", ns: "a", node: 1, labels: labels("role", "client")},
		podSpec{name: "cl-ax", ns: "a", node: 0},
		podSpec{name: "cl-b", ns: "b", node: 1, labels: labels("role", "client")},
		podSpec{name: "cl-bx", ns: "b", node: 0},
		podSpec{name: "cl-c", ns: "c", node: 1, labels: labels("role", "client")},
	)
	srv := f.tcp(t, "srv-0", portWeb)
	// ingress applies a policy on srv-0 admitting the peers and checks
	// that exactly the clients named are answered.
	ingress := func(t *testing.T, name string, allowed []string, peers ...networkingv1.NetworkPolicyPeer) {
		t.Helper()
		np := netpol(f.ns("a"), name, ingressOnly, "role", "server")
		np.Spec.Ingress = []networkingv1.NetworkPolicyIngressRule{from(nil, peers...)}
		since := f.apply(t, np)
		var cs []check
		for _, cl := range []string{"cl-a", "cl-ax", "cl-b", "cl-bx", "cl-c"} {
			if slices.Contains(allowed, cl) {
				cs = append(cs, f.allow(t, cl, srv)...)
			} else {
				cs = append(cs, f.deny(t, cl, srv)...)
			}
		}
		await(t, since, name+": srv-0 answers only "+strings.Join(allowed, ", "), cs...)
	}

	f.run(t, "pod-selector", func(t *testing.T) {
		// Only the policy's namespace: cl-b and cl-c carry the label too.
		ingress(t, "pods", []string{"cl-a"}, podPeer("role", "client"))
	})
	f.run(t, "namespace-selector-labels", func(t *testing.T) {
		ingress(t, "ns-labels", []string{"cl-b", "cl-bx"}, nsPeer("team", "b"))
	})
	f.run(t, "namespace-selector-expressions", func(t *testing.T) {
		ingress(t, "ns-expressions", []string{"cl-b", "cl-bx", "cl-c"}, networkingv1.NetworkPolicyPeer{
			NamespaceSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
				{Key: "team", Operator: metav1.LabelSelectorOpIn, Values: []string{"b", "c"}}}}})
	})
	f.run(t, "namespace-and-pod-selector", func(t *testing.T) {
		ingress(t, "and", []string{"cl-b"},
			networkingv1.NetworkPolicyPeer{NamespaceSelector: sel("team", "b"), PodSelector: sel("role", "client")})
	})
	f.run(t, "namespace-or-pod-selector", func(t *testing.T) {
		ingress(t, "or", []string{"cl-a", "cl-b", "cl-bx"}, nsPeer("team", "b"), podPeer("role", "client"))
	})
	f.run(t, "all-namespaces", func(t *testing.T) {
		ingress(t, "all-ns", []string{"cl-a", "cl-b", "cl-c"},
			networkingv1.NetworkPolicyPeer{NamespaceSelector: sel(), PodSelector: sel("role", "client")})
	})
	f.run(t, "egress-namespace-selector", func(t *testing.T) {
		np := netpol(f.ns("a"), "egress-ns", egressOnly, "role", "client")
		np.Spec.Egress = []networkingv1.NetworkPolicyEgressRule{to(nil, networkingv1.NetworkPolicyPeer{
			NamespaceSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
				{Key: "team", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"a", "c"}}}}})}
		since := f.apply(t, np)
		await(t, since, "cl-a reaches namespace b only", join(
			f.allow(t, "cl-a", f.tcp(t, "cl-b", portWeb), f.tcp(t, "cl-bx", portWeb), f.udp(t, "cl-bx", portEcho)),
			f.deny(t, "cl-a", srv, f.tcp(t, "cl-ax", portWeb), f.tcp(t, "cl-c", portWeb)),
			f.allow(t, "cl-ax", srv, f.tcp(t, "cl-c", portWeb)),
		)...)
	})
}
