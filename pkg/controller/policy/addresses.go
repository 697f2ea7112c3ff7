package policy

import (
	"net/netip"
	"slices"

	corev1 "k8s.io/api/core/v1"
)

// PeerAddresses are the addresses an address group of the peer holds: the
// IPs of the running pods it selects (host-network pods excluded: they
// have the node's address), as host prefixes the way Neutron stores them.
// Pure.
func PeerAddresses(peer Peer, v PodsView) []string {
	var out []string
	for i := range v.Pods {
		pod := &v.Pods[i]
		if pod.Spec.HostNetwork || pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
			continue
		}
		if !peer.Matches(Pod{Namespace: pod.Namespace, Labels: pod.Labels}, v.NamespaceLabels[pod.Namespace]) {
			continue
		}
		for _, ip := range pod.Status.PodIPs {
			if a, err := netip.ParseAddr(ip.IP); err == nil {
				out = append(out, netip.PrefixFrom(a, a.BitLen()).String())
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// AddressDiff returns what to add to and remove from an address group
// holding have so that it holds want. Pure.
func AddressDiff(want, have []string) (add, remove []string) {
	in := func(list []string, s string) bool { return slices.Contains(list, s) }
	for _, a := range want {
		if !in(have, a) {
			add = append(add, a)
		}
	}
	for _, a := range have {
		if !in(want, a) {
			remove = append(remove, a)
		}
	}
	return add, remove
}
