//go:build e2e

package policy

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"

	"github.com/kuryr-k8s/kuryr/test/e2e/framework"
)

// TestPorts: which ports a rule opens. A named port is the selected pods'
// container port of that name for ingress, the peer pods' for egress; a
// range with endPort opens every port in it and no other; UDP is opened
// or not like TCP; an SCTP port (which cannot be sent here) becomes an
// SCTP rule of the policy's security group.
func TestPorts(t *testing.T) {
	f := newFixture(t, "np-ports", map[string]map[string]string{"a": nil},
		podSpec{name: "srv-0", ns: "a", node: 0, labels: labels("role", "server"), server: true},
		podSpec{name: "srv-1", ns: "a", node: 1, labels: labels("role", "server"), server: true},
		podSpec{name: "cl-0", ns: "a", node: 1, labels: labels("role", "client")},
		podSpec{name: "cl-1", ns: "a", node: 0, labels: labels("role", "client")},
	)
	tcp := func(pod string, port int) dest { return f.tcp(t, pod, port) }
	// servers applies an ingress policy on the servers admitting the
	// clients on the ports.
	servers := func(t *testing.T, name string, ps ...networkingv1.NetworkPolicyPort) time.Time {
		t.Helper()
		np := netpol(f.ns("a"), name, ingressOnly, "role", "server")
		np.Spec.Ingress = []networkingv1.NetworkPolicyIngressRule{from(ps, podPeer("role", "client"))}
		return f.apply(t, np)
	}

	f.run(t, "named-ingress", func(t *testing.T) {
		since := servers(t, "named-ingress", port("web"))
		await(t, since, `ingress "web" is 8080`, join(
			f.allow(t, "cl-0", tcp("srv-0", portWeb), tcp("srv-1", portWeb)),
			f.allow(t, "cl-1", tcp("srv-0", portWeb)),
			f.deny(t, "cl-0", tcp("srv-0", port8081), tcp("srv-1", portAlt), f.udp(t, "srv-0", portEcho)),
		)...)
	})

	f.run(t, "named-egress", func(t *testing.T) {
		np := netpol(f.ns("a"), "named-egress", egressOnly, "pod", "cl-0")
		np.Spec.Egress = []networkingv1.NetworkPolicyEgressRule{to(ports(port("alt")), podPeer("role", "server"))}
		since := f.apply(t, np)
		await(t, since, `egress "alt" to the servers is 8082`, join(
			f.allow(t, "cl-0", tcp("srv-0", portAlt), tcp("srv-1", portAlt)),
			f.deny(t, "cl-0", tcp("srv-0", portWeb), tcp("srv-1", port8081), tcp("cl-1", portAlt)),
			f.allow(t, "cl-1", tcp("srv-0", portWeb)),
		)...)
	})

	f.run(t, "range", func(t *testing.T) {
		since := servers(t, "range", portRange(portWeb, portAlt))
		await(t, since, "8080-8082 open, 8090 and UDP not", join(
			f.allow(t, "cl-0", tcp("srv-0", portWeb), tcp("srv-0", port8081), tcp("srv-0", portAlt)),
			f.allow(t, "cl-1", tcp("srv-1", portWeb), tcp("srv-1", port8081), tcp("srv-1", portAlt)),
			f.deny(t, "cl-0", tcp("srv-0", port8090), f.udp(t, "srv-0", portEcho)),
			f.deny(t, "cl-1", tcp("srv-1", port8090)),
		)...)
	})

	f.run(t, "udp", func(t *testing.T) {
		since := servers(t, "udp", port("echo", corev1.ProtocolUDP))
		await(t, since, `UDP "echo" open, TCP not`, join(
			f.allow(t, "cl-0", f.udp(t, "srv-0", portEcho), f.udp(t, "srv-1", portEcho)),
			f.deny(t, "cl-0", tcp("srv-0", portWeb), tcp("srv-1", portWeb)),
		)...)
		// The same port number over TCP, then TCP only.
		since = f.updatePolicy(t, f.ns("a"), "udp", func(s *networkingv1.NetworkPolicySpec) {
			s.Ingress[0].Ports = ports(port(portWeb))
		})
		await(t, since, "TCP 8080 open, UDP closed", join(
			f.allow(t, "cl-0", tcp("srv-0", portWeb), tcp("srv-1", portWeb)),
			f.deny(t, "cl-0", f.udp(t, "srv-0", portEcho), f.udp(t, "srv-1", portEcho)),
		)...)
	})

	f.run(t, "sctp", func(t *testing.T) {
		const sctpPort = 7777
		since := servers(t, "sctp", port(sctpPort, corev1.ProtocolSCTP))
		knp := f.k.WaitPolicyReady(t, f.ns("a"), "sctp", policyReady)
		framework.Eventually(t, flipTimeout, 500*time.Millisecond, "an SCTP rule in the policy's security group", func() (bool, error) {
			var seen []string
			for _, r := range f.c.SecurityGroupRules(t, knp.Status.SecurityGroupID) {
				if r.Direction == "ingress" && r.Protocol == "sctp" && r.PortRangeMin == sctpPort && r.PortRangeMax == sctpPort {
					return true, nil
				}
				seen = append(seen, fmt.Sprintf("%s %s %d-%d", r.Direction, r.Protocol, r.PortRangeMin, r.PortRangeMax))
			}
			return false, fmt.Errorf("rules: %v", seen)
		})
		// SCTP only: TCP and UDP are closed.
		await(t, since, "SCTP policy closes TCP and UDP", join(
			f.deny(t, "cl-0", tcp("srv-0", portWeb), f.udp(t, "srv-1", portEcho)),
		)...)
	})
}
