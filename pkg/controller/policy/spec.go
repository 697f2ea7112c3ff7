package policy

import (
	"crypto/sha256"
	"encoding/hex"
	"slices"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"

	kuryrv1 "github.com/kuryr-k8s/kuryr/api/v1"
)

// PeerID is a short, stable name for a peer (its key hashed), used in
// address group names and as the KuryrNetworkPolicy's peer key.
func PeerID(p Peer) string {
	sum := sha256.Sum256([]byte(p.Key()))
	return hex.EncodeToString(sum[:8])
}

// SpecOf is the KuryrNetworkPolicy spec of a policy and its translation.
// Pure.
func SpecOf(np *networkingv1.NetworkPolicy, d Desired) kuryrv1.KuryrNetworkPolicySpec {
	spec := kuryrv1.KuryrNetworkPolicySpec{PodSelector: *np.Spec.PodSelector.DeepCopy(), Ingress: d.Ingress, Egress: d.Egress}
	peers := map[string]kuryrv1.PolicyPeer{}
	for _, r := range d.Rules {
		pr := kuryrv1.PolicyRule{Direction: r.Direction, Protocol: r.Protocol, PortMin: r.PortMin, PortMax: r.PortMax, CIDR: r.CIDR}
		if r.Peer != nil {
			id := PeerID(*r.Peer)
			pr.Peer = id
			peers[id] = kuryrv1.PolicyPeer{Key: id, Namespace: r.Peer.Namespace,
				NamespaceSelector: r.Peer.Namespaces.DeepCopy(), PodSelector: r.Peer.Pods.DeepCopy()}
		}
		spec.Rules = append(spec.Rules, pr)
	}
	for _, id := range sortedKeys(peers) {
		spec.Peers = append(spec.Peers, peers[id])
	}
	return spec
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// PodsView is what the translation reads of the cluster: pods, and the
// labels of their namespaces.
type PodsView struct {
	Pods            []corev1.Pod
	NamespaceLabels map[string]map[string]string
}

// NamedPortsIn resolves named ports over a view of the cluster: for
// ingress, over the pods the policy selects; for egress, over the peer's
// pods (every pod for a rule without peers). Pure.
func NamedPortsIn(np *networkingv1.NetworkPolicy, v PodsView) NamedPorts {
	return func(dir, name string, peer *Peer) []Port {
		seen := map[Port]bool{}
		var out []Port
		for i := range v.Pods {
			pod := &v.Pods[i]
			p := Pod{Namespace: pod.Namespace, Labels: pod.Labels}
			switch {
			case dir == Ingress && !Selects(np, p):
				continue
			case dir == Egress && peer != nil && !peer.Matches(p, v.NamespaceLabels[pod.Namespace]):
				continue
			}
			if pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
				continue
			}
			for _, c := range servingContainers(pod) {
				for _, cp := range c.Ports {
					proto := cp.Protocol
					if proto == "" {
						proto = corev1.ProtocolTCP
					}
					port := Port{Protocol: proto, Number: cp.ContainerPort}
					if cp.Name == name && !seen[port] {
						seen[port] = true
						out = append(out, port)
					}
				}
			}
		}
		return out
	}
}

// servingContainers are the containers that may serve a port: the app
// containers and the sidecars (init containers that keep running).
func servingContainers(pod *corev1.Pod) []corev1.Container {
	out := slices.Clone(pod.Spec.Containers)
	for _, c := range pod.Spec.InitContainers {
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			out = append(out, c)
		}
	}
	return out
}
