//go:build e2e

package policy

import (
	"testing"

	networkingv1 "k8s.io/api/networking/v1"
)

// TestUpdates: traffic follows changes while everything runs. A policy's
// ports, peers and pod selector change; it is deleted; a client gains and
// loses the label a peer selects (ingress and egress); a server loses and
// regains the label the policy selects (unrestricted meanwhile); a
// namespace gains and loses the label a namespace peer selects. Each flip
// is timed from the change.
func TestUpdates(t *testing.T) {
	f := newFixture(t, "np-updates", map[string]map[string]string{"a": nil, "b": nil},
		podSpec{name: "srv-0", ns: "a", node: 0, labels: labels("role", "server"), server: true},
		podSpec{name: "srv-1", ns: "a", node: 1, labels: labels("role", "server"), server: true},
		podSpec{name: "cl-0", ns: "a", node: 1},
		podSpec{name: "cl-1", ns: "a", node: 0},
		podSpec{name: "cl-b", ns: "b", node: 0},
	)
	tcp := func(pod string, port int) dest { return f.tcp(t, pod, port) }
	// servers applies an ingress policy on the servers admitting peers
	// (nobody for none).
	servers := func(t *testing.T, name string, peers ...networkingv1.NetworkPolicyPeer) {
		t.Helper()
		np := netpol(f.ns("a"), name, ingressOnly, "role", "server")
		if len(peers) > 0 {
			np.Spec.Ingress = []networkingv1.NetworkPolicyIngressRule{from(nil, peers...)}
		}
		since := f.apply(t, np)
		await(t, since, name+": nobody admitted yet", join(
			f.deny(t, "cl-0", tcp("srv-0", portWeb), tcp("srv-1", portWeb)),
			f.deny(t, "cl-b", tcp("srv-1", portWeb)),
		)...)
	}

	f.run(t, "policy-spec", func(t *testing.T) {
		np := netpol(f.ns("a"), "spec", ingressOnly, "role", "server")
		np.Spec.Ingress = []networkingv1.NetworkPolicyIngressRule{from(ports(port(portWeb)), podPeer("pod", "cl-0"))}
		since := f.apply(t, np)
		await(t, since, "cl-0 on 8080", join(
			f.allow(t, "cl-0", tcp("srv-0", portWeb), tcp("srv-1", portWeb)),
			f.deny(t, "cl-0", tcp("srv-0", port8081)),
			f.deny(t, "cl-1", tcp("srv-0", portWeb), tcp("srv-1", port8081)),
		)...)
		since = f.updatePolicy(t, f.ns("a"), "spec", func(s *networkingv1.NetworkPolicySpec) {
			s.Ingress = []networkingv1.NetworkPolicyIngressRule{from(ports(port(port8081)), podPeer("pod", "cl-1"))}
		})
		await(t, since, "rule changed to cl-1 on 8081", join(
			f.allow(t, "cl-1", tcp("srv-0", port8081), tcp("srv-1", port8081)),
			f.deny(t, "cl-1", tcp("srv-0", portWeb)),
			f.deny(t, "cl-0", tcp("srv-0", portWeb), tcp("srv-1", port8081)),
		)...)
		since = f.updatePolicy(t, f.ns("a"), "spec", func(s *networkingv1.NetworkPolicySpec) {
			s.PodSelector = *sel("pod", "srv-1")
		})
		await(t, since, "pod selector narrowed to srv-1: srv-0 unrestricted", join(
			f.allow(t, "cl-0", tcp("srv-0", portWeb), tcp("srv-0", port8081)),
			f.deny(t, "cl-0", tcp("srv-1", portWeb)),
			f.allow(t, "cl-1", tcp("srv-1", port8081)),
		)...)
		since = f.deletePolicy(t, f.ns("a"), "spec")
		await(t, since, "policy deleted: srv-1 unrestricted", join(
			f.allow(t, "cl-0", tcp("srv-1", portWeb)),
			f.allow(t, "cl-b", tcp("srv-1", portWeb), tcp("srv-1", port8081)),
		)...)
	})

	f.run(t, "client-label", func(t *testing.T) {
		t.Cleanup(func() { f.labelPod(t, "cl-0", labels("access", "")) })
		servers(t, "client-label", podPeer("access", "yes"))
		since := f.labelPod(t, "cl-0", labels("access", "yes"))
		await(t, since, "cl-0 labelled: admitted", join(
			f.allow(t, "cl-0", tcp("srv-0", portWeb), tcp("srv-1", portWeb)),
			f.deny(t, "cl-1", tcp("srv-0", portWeb)),
		)...)
		since = f.labelPod(t, "cl-0", labels("access", ""))
		await(t, since, "cl-0 unlabelled: denied", f.deny(t, "cl-0", tcp("srv-0", portWeb), tcp("srv-1", portWeb))...)
	})

	f.run(t, "egress-peer-label", func(t *testing.T) {
		t.Cleanup(func() { f.labelPod(t, "srv-0", labels("access", "")) })
		np := netpol(f.ns("a"), "egress-label", egressOnly, "pod", "cl-1")
		np.Spec.Egress = []networkingv1.NetworkPolicyEgressRule{to(nil, podPeer("access", "yes"))}
		since := f.apply(t, np)
		await(t, since, "cl-1 reaches nobody", f.deny(t, "cl-1", tcp("srv-0", portWeb), tcp("srv-1", portWeb))...)
		since = f.labelPod(t, "srv-0", labels("access", "yes"))
		await(t, since, "srv-0 labelled: cl-1 reaches it", join(
			f.allow(t, "cl-1", tcp("srv-0", portWeb)),
			f.deny(t, "cl-1", tcp("srv-1", portWeb)),
		)...)
		since = f.labelPod(t, "srv-0", labels("access", ""))
		await(t, since, "srv-0 unlabelled: cl-1 reaches nobody", f.deny(t, "cl-1", tcp("srv-0", portWeb))...)
	})

	f.run(t, "server-label", func(t *testing.T) {
		t.Cleanup(func() { f.labelPod(t, "srv-0", labels("role", "server")) })
		servers(t, "server-label")
		since := f.labelPod(t, "srv-0", labels("role", ""))
		await(t, since, "srv-0 no longer selected: unrestricted", join(
			f.allow(t, "cl-0", tcp("srv-0", portWeb), tcp("srv-0", port8090), f.udp(t, "srv-0", portEcho)),
			f.allow(t, "cl-b", tcp("srv-0", portWeb)),
			f.deny(t, "cl-0", tcp("srv-1", portWeb)),
		)...)
		since = f.labelPod(t, "srv-0", labels("role", "server"))
		await(t, since, "srv-0 selected again: denied", f.deny(t, "cl-0", tcp("srv-0", portWeb), f.udp(t, "srv-0", portEcho))...)
	})

	f.run(t, "namespace-label", func(t *testing.T) {
		t.Cleanup(func() { f.labelNamespace(t, "b", labels("access", "")) })
		servers(t, "namespace-label", nsPeer("access", "yes"))
		since := f.labelNamespace(t, "b", labels("access", "yes"))
		await(t, since, "namespace b labelled: cl-b admitted", join(
			f.allow(t, "cl-b", tcp("srv-0", portWeb), tcp("srv-1", portWeb)),
			f.deny(t, "cl-0", tcp("srv-0", portWeb)),
		)...)
		since = f.labelNamespace(t, "b", labels("access", ""))
		await(t, since, "namespace b unlabelled: cl-b denied", f.deny(t, "cl-b", tcp("srv-0", portWeb), tcp("srv-1", portWeb))...)
	})
}
