package policy

import (
	"context"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kuryrv1 "github.com/kuryr-k8s/kuryr/api/v1"
	"github.com/kuryr-k8s/kuryr/pkg/neutron"
)

// Members is what a peer's address group is made from: every live
// KuryrPort with the labels of its pod (none for one whose pod is gone,
// as the KuryrPort reconciler takes it) and the labels of the namespaces.
type Members struct {
	Ports           []PortOf
	NamespaceLabels map[string]map[string]string
}

// PortOf is a KuryrPort's pod and the port's addresses (host prefixes).
type PortOf struct {
	Pod       Pod
	Addresses []string
}

// readMembers reads the members from the cache: KuryrPorts being deleted
// are left out (their port goes back to a pool or away: a pod that gets it
// next must not be admitted as this one).
func readMembers(ctx context.Context, c client.Reader) (Members, error) {
	var kps kuryrv1.KuryrPortList
	if err := c.List(ctx, &kps, client.UnsafeDisableDeepCopy); err != nil {
		return Members{}, fmt.Errorf("list KuryrPorts: %w", err)
	}
	view, err := readView(ctx, c)
	if err != nil {
		return Members{}, err
	}
	pods := make(map[string]*corev1.Pod, len(view.Pods))
	for i := range view.Pods {
		pods[view.Pods[i].Namespace+"/"+view.Pods[i].Name] = &view.Pods[i]
	}
	m := Members{NamespaceLabels: view.NamespaceLabels}
	for i := range kps.Items {
		kp := &kps.Items[i]
		if !kp.DeletionTimestamp.IsZero() {
			continue
		}
		addrs := PortAddresses(kp)
		if len(addrs) == 0 {
			continue
		}
		p := Pod{Namespace: kp.Namespace}
		if pod := pods[kp.Namespace+"/"+kp.Name]; pod != nil && string(pod.UID) == kp.Spec.PodUID {
			p.Labels = pod.Labels
		}
		m.Ports = append(m.Ports, PortOf{Pod: p, Addresses: addrs})
	}
	return m, nil
}

// PortAddresses are a KuryrPort's addresses as an address group holds
// them (host prefixes), of every VIF. Pure.
func PortAddresses(kp *kuryrv1.KuryrPort) []string {
	var out []string
	for _, v := range kp.Status.VIFs {
		for _, ip := range v.IPs {
			// 10.10.0.5/24 is the host 10.10.0.5, not its subnet.
			host, _, _ := strings.Cut(ip.Address, "/")
			if a, err := neutron.HostPrefix(host); err == nil {
				out = append(out, a)
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// Addresses are the addresses of the peer's pods: its address group's
// content. Pure.
func (m Members) Addresses(peer Peer) []string {
	var out []string
	for _, p := range m.Ports {
		if peer.Matches(p.Pod, m.NamespaceLabels[p.Pod.Namespace]) {
			out = append(out, p.Addresses...)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}
