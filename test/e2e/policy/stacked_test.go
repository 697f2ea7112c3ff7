//go:build e2e

package policy

import (
	"testing"

	networkingv1 "k8s.io/api/networking/v1"
)

// TestStackedPolicies: the policies selecting a pod add up. Two policies
// each admitting one client admit both and no third, and deleting one
// takes only its client away; ports add up the same way; a namespace's
// default deny plus a policy admitting one client to one pod lets that
// through and nothing else; egress and ingress policies on one pod each
// restrict their own direction.
func TestStackedPolicies(t *testing.T) {
	f := newFixture(t, "np-stacked", map[string]map[string]string{"a": nil},
		podSpec{name: "srv-0", ns: "a", node: 0, labels: labels("role", "server"), server: true},
		podSpec{name: "cl-0", ns: "a", node: 1},
		podSpec{name: "cl-1", ns: "a", node: 0},
		podSpec{name: "cl-2", ns: "a", node: 1},
	)
	web := func(pod string) dest { return f.tcp(t, pod, portWeb) }
	// admit is an ingress policy on srv-0 admitting one client on the ports.
	admit := func(name, client string, ps ...networkingv1.NetworkPolicyPort) *networkingv1.NetworkPolicy {
		np := netpol(f.ns("a"), name, ingressOnly, "role", "server")
		np.Spec.Ingress = []networkingv1.NetworkPolicyIngressRule{from(ps, podPeer("pod", client))}
		return np
	}

	f.run(t, "peers", func(t *testing.T) {
		f.apply(t, admit("allow-cl-0", "cl-0"))
		since := f.apply(t, admit("allow-cl-1", "cl-1"))
		await(t, since, "two policies admit cl-0 and cl-1", join(
			f.allow(t, "cl-0", web("srv-0"), f.udp(t, "srv-0", portEcho)),
			f.allow(t, "cl-1", web("srv-0")),
			f.deny(t, "cl-2", web("srv-0"), f.udp(t, "srv-0", portEcho)),
		)...)
		since = f.deletePolicy(t, f.ns("a"), "allow-cl-0")
		await(t, since, "one policy deleted: cl-1 only", join(
			f.deny(t, "cl-0", web("srv-0")),
			f.allow(t, "cl-1", web("srv-0")),
			f.deny(t, "cl-2", web("srv-0")),
		)...)
	})

	f.run(t, "ports", func(t *testing.T) {
		f.apply(t, admit("web", "cl-0", port(portWeb)))
		since := f.apply(t, admit("8081", "cl-0", port(port8081)))
		await(t, since, "two policies open 8080 and 8081 to cl-0", join(
			f.allow(t, "cl-0", web("srv-0"), f.tcp(t, "srv-0", port8081)),
			f.deny(t, "cl-0", f.tcp(t, "srv-0", portAlt)),
			f.deny(t, "cl-1", web("srv-0"), f.tcp(t, "srv-0", port8081)),
		)...)
	})

	f.run(t, "default-deny-plus-allow", func(t *testing.T) {
		f.apply(t, netpol(f.ns("a"), "deny-all", ingressOnly))
		since := f.apply(t, admit("allow-cl-2", "cl-2"))
		await(t, since, "default deny plus cl-2 -> srv-0", join(
			f.allow(t, "cl-2", web("srv-0")),
			f.deny(t, "cl-1", web("srv-0"), web("cl-0")),
			f.deny(t, "cl-2", web("cl-1")),
		)...)
	})

	f.run(t, "both-directions", func(t *testing.T) {
		f.apply(t, admit("in-cl-0", "cl-0"))
		out := netpol(f.ns("a"), "out-cl-2", egressOnly, "role", "server")
		out.Spec.Egress = []networkingv1.NetworkPolicyEgressRule{to(nil, podPeer("pod", "cl-2"))}
		since := f.apply(t, out)
		await(t, since, "srv-0: in from cl-0, out to cl-2", join(
			f.allow(t, "cl-0", web("srv-0")),
			f.deny(t, "cl-2", web("srv-0")),
			f.allow(t, "srv-0", web("cl-2")),
			f.deny(t, "srv-0", web("cl-0"), web("cl-1")),
		)...)
	})
}
