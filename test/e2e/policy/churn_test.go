//go:build e2e

package policy

import (
	"fmt"
	"strings"
	"testing"
	"time"

	networkingv1 "k8s.io/api/networking/v1"

	"github.com/kuryr-k8s/kuryr/test/e2e/framework"
)

// TestChurn: pods and namespaces come and go under standing policies. A
// new pod a peer selects is admitted and one it does not select is not; a
// replacement client (new IP) is admitted, its port joins the peer's
// group, and the port of the one it replaced is gone or has left the
// group; a client deleted and
// created again under its name is admitted again; a new pod the policy
// selects is isolated from its first packet; a new namespace a namespace
// peer selects has its pods admitted, and another does not.
func TestChurn(t *testing.T) {
	f := newFixture(t, "np-churn", map[string]map[string]string{"a": nil},
		podSpec{name: "srv-0", ns: "a", node: 0, labels: labels("role", "server"), server: true},
		podSpec{name: "cl-0", ns: "a", node: 1, labels: labels("role", "client")},
		podSpec{name: "cl-1", ns: "a", node: 0},
	)
	web := func(pod string) dest { return f.tcp(t, pod, portWeb) }
	// servers applies an ingress policy on the servers admitting peers and
	// returns when it was created.
	servers := func(t *testing.T, name string, peers ...networkingv1.NetworkPolicyPeer) time.Time {
		t.Helper()
		np := netpol(f.ns("a"), name, ingressOnly, "role", "server")
		np.Spec.Ingress = []networkingv1.NetworkPolicyIngressRule{from(nil, peers...)}
		return f.apply(t, np)
	}

	f.run(t, "replaced-client", func(t *testing.T) {
		since := servers(t, "clients", podPeer("role", "client"))
		await(t, since, "cl-0 admitted, cl-1 not", join(f.allow(t, "cl-0", web("srv-0")), f.deny(t, "cl-1", web("srv-0")))...)
		group := f.onlyPeerGroup(t, f.ns("a"), "clients")
		old, oldPort := f.pod(t, "cl-0").Status.PodIP, f.k.PodPortID(t, f.ns("a"), "cl-0")
		f.addPods(t, podSpec{name: "cl-0-new", ns: "a", node: 0, labels: labels("role", "client")},
			podSpec{name: "cl-1-new", ns: "a", node: 1})
		// Nothing admits cl-1-new: denied from its first packet on.
		f.firstRound(t, "new unselected client", f.deny(t, "cl-1-new", web("srv-0"))...)
		await(t, time.Now(), "new client cl-0-new admitted once Ready", join(
			f.allow(t, "cl-0-new", web("srv-0"), f.udp(t, "srv-0", portEcho)),
			f.deny(t, "cl-1-new", web("srv-0")),
		)...)
		if port := f.k.PodPortID(t, f.ns("a"), "cl-0-new"); !f.carries(t, port, group) {
			t.Errorf("the new client's port %s does not carry the peer group %s", port, group)
		}
		start := time.Now()
		f.deletePod(t, "cl-0")
		framework.Eventually(t, flipTimeout, 250*time.Millisecond, "the deleted client's port out of the peer group", func() (bool, error) {
			return !f.carries(t, oldPort, group), fmt.Errorf("port %s still carries %s", oldPort, group)
		})
		t.Logf("the replaced client's port was gone or out of the peer group %s after its deletion began", fmtDur(time.Since(start)))
		await(t, start, "replacement still admitted", f.allow(t, "cl-0-new", web("srv-0"))...)

		// Recreated under the same name: admitted at its (new) address.
		f.addPods(t, podSpec{name: "cl-0", ns: "a", node: 1, labels: labels("role", "client")})
		t.Logf("cl-0 recreated: address %s, was %s", f.pod(t, "cl-0").Status.PodIP, old)
		await(t, time.Now(), "recreated cl-0 admitted once Ready", join(
			f.allow(t, "cl-0", web("srv-0")),
			f.deny(t, "cl-1", web("srv-0")),
		)...)
	})

	f.run(t, "new-selected-server", func(t *testing.T) {
		since := servers(t, "servers", podPeer("pod", "cl-1"))
		await(t, since, "cl-1 admitted", f.allow(t, "cl-1", web("srv-0"))...)
		f.addPods(t, podSpec{name: "srv-new", ns: "a", node: 1, labels: labels("role", "server"), server: true})
		f.firstRound(t, "new server isolated", f.deny(t, "srv-0", web("srv-new"), f.udp(t, "srv-new", portEcho))...)
		await(t, time.Now(), "new server: cl-1 admitted, others not", join(
			f.allow(t, "cl-1", web("srv-new"), web("srv-0")),
			f.deny(t, "srv-0", web("srv-new")),
		)...)
	})

	f.run(t, "new-namespaces", func(t *testing.T) {
		since := servers(t, "trusted", nsPeer("team", "trusted-"+f.base))
		await(t, since, "namespace a not trusted", f.deny(t, "cl-1", web("srv-0"))...)
		f.addNamespace(t, "trusted", labels("team", "trusted-"+f.base))
		f.addNamespace(t, "other", labels("team", "other-"+f.base))
		f.addPods(t, podSpec{name: "cl-t", ns: "trusted", node: 1}, podSpec{name: "cl-o", ns: "other", node: 0})
		f.firstRound(t, "pod of an unselected new namespace", f.deny(t, "cl-o", web("srv-0"))...)
		await(t, time.Now(), "pod of a selected new namespace admitted once Ready", join(
			f.allow(t, "cl-t", web("srv-0"), f.udp(t, "srv-0", portEcho)),
			f.deny(t, "cl-o", web("srv-0")),
			f.deny(t, "cl-1", web("srv-0")),
		)...)
	})
}

// firstRound checks at once, without waiting: a pod that nothing admits
// must be denied from the moment it is Ready.
func (f *fixture) firstRound(t *testing.T, what string, cs ...check) {
	t.Helper()
	bad, errs := round(t, cs)
	if len(errs) > 0 {
		t.Fatalf("%s: probes fail to run: %s", what, strings.Join(errs, "; "))
	}
	if len(bad) > 0 {
		t.Errorf("%s: open right after Ready: %s", what, strings.Join(bad, "; "))
	}
}

// onlyPeerGroup is the group of a policy's one peer, as its
// KuryrNetworkPolicy records it.
func (f *fixture) onlyPeerGroup(t *testing.T, ns, name string) string {
	t.Helper()
	groups := f.k.PeerGroups(t, ns, name)
	if len(groups) != 1 {
		t.Fatalf("policy %s/%s: peer groups %v, want one", ns, name, groups)
	}
	for id := range groups {
		return id
	}
	return ""
}

// carries reports whether a port exists and is in a peer group (carries
// the security group, or has its addresses in the address group): its pod
// is a member of the peer.
func (f *fixture) carries(t *testing.T, port, group string) bool {
	t.Helper()
	return f.c.PortInPeer(t, port, group)
}
