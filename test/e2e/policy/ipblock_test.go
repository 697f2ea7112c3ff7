//go:build e2e

package policy

import (
	"net/netip"
	"testing"

	networkingv1 "k8s.io/api/networking/v1"
)

// TestIPBlock: an ipBlock admits the addresses of its CIDR but those of
// its excepts, for ingress and for egress; a host prefix admits that host
// only.
func TestIPBlock(t *testing.T) {
	f := newFixture(t, "np-ipblock", map[string]map[string]string{"a": nil},
		podSpec{name: "srv-0", ns: "a", node: 0, labels: labels("role", "server"), server: true},
		podSpec{name: "srv-1", ns: "a", node: 1, labels: labels("role", "server"), server: true},
		podSpec{name: "cl-0", ns: "a", node: 1, labels: labels("role", "client")},
		podSpec{name: "cl-1", ns: "a", node: 0, labels: labels("role", "client")},
	)
	ip := func(pod string) string { return f.pod(t, pod).Status.PodIP }
	block := cover(t, ip("srv-0"), ip("srv-1"), ip("cl-0"), ip("cl-1"))
	t.Logf("the pods are in %s", block)
	web := func(pod string) dest { return f.tcp(t, pod, portWeb) }

	f.run(t, "ingress-except", func(t *testing.T) {
		np := netpol(f.ns("a"), "ingress-block", ingressOnly, "role", "server")
		np.Spec.Ingress = []networkingv1.NetworkPolicyIngressRule{from(nil, ipPeer(block, host(t, ip("cl-1"))))}
		since := f.apply(t, np)
		await(t, since, "servers answer the block but cl-1", join(
			f.allow(t, "cl-0", web("srv-0"), web("srv-1"), f.udp(t, "srv-0", portEcho)),
			f.deny(t, "cl-1", web("srv-0"), web("srv-1"), f.udp(t, "srv-1", portEcho)),
		)...)
	})

	f.run(t, "ingress-host", func(t *testing.T) {
		np := netpol(f.ns("a"), "ingress-host", ingressOnly, "role", "server")
		np.Spec.Ingress = []networkingv1.NetworkPolicyIngressRule{from(nil, ipPeer(host(t, ip("cl-1"))))}
		since := f.apply(t, np)
		await(t, since, "servers answer cl-1 only", join(
			f.allow(t, "cl-1", web("srv-0"), web("srv-1")),
			f.deny(t, "cl-0", web("srv-0"), web("srv-1")),
		)...)
	})

	f.run(t, "egress-except", func(t *testing.T) {
		np := netpol(f.ns("a"), "egress-block", egressOnly, "pod", "cl-0")
		np.Spec.Egress = []networkingv1.NetworkPolicyEgressRule{to(nil, ipPeer(block, host(t, ip("srv-1"))))}
		since := f.apply(t, np)
		await(t, since, "cl-0 reaches the block but srv-1", join(
			f.allow(t, "cl-0", web("srv-0"), f.udp(t, "srv-0", portEcho), web("cl-1")),
			f.deny(t, "cl-0", web("srv-1"), f.udp(t, "srv-1", portEcho)),
			// cl-1 is not selected.
			f.allow(t, "cl-1", web("srv-1")),
		)...)
	})
}

// cover is the prefix of at most 16 bits (64 for IPv6) holding every ip.
func cover(t *testing.T, ips ...string) string {
	t.Helper()
	first, err := netip.ParseAddr(ips[0])
	if err != nil {
		t.Fatalf("pod IP %q: %v", ips[0], err)
	}
	bits := 16
	if first.Is6() {
		bits = 64
	}
	for ; bits > 0; bits-- {
		p := netip.PrefixFrom(first, bits).Masked()
		all := true
		for _, s := range ips[1:] {
			if a, err := netip.ParseAddr(s); err != nil || !p.Contains(a) {
				all = false
			}
		}
		if all {
			return p.String()
		}
	}
	t.Fatalf("no prefix holds %v", ips)
	return ""
}

// host is an address's host prefix (/32 or /128).
func host(t *testing.T, ip string) string {
	t.Helper()
	a, err := netip.ParseAddr(ip)
	if err != nil {
		t.Fatalf("pod IP %q: %v", ip, err)
	}
	return netip.PrefixFrom(a, a.BitLen()).String()
}
