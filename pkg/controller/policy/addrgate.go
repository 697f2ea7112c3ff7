package policy

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	kuryrv1 "github.com/kuryr-k8s/kuryr/api/v1"
	"github.com/kuryr-k8s/kuryr/pkg/neutron"
)

// gateAPI is the Neutron seam of the address gate.
type gateAPI interface {
	ListAddressGroups(ctx context.Context) ([]neutron.AddressGroup, error)
	RemoveAddresses(ctx context.Context, id string, addresses []string) (*neutron.AddressGroup, error)
}

// AddressGate keeps an address from admitting its next pod as its last
// one: a port from a pool, or a new port given an address a gone pod had,
// may find the address still in the address group of a peer the pod is
// not one of (the policy reconciler takes it out when it sees the old
// KuryrPort go, which can be after the new pod starts). Before a
// KuryrPort gets its port's addresses, the KuryrPort reconciler asks the
// gate to take them out of every such group; it implements
// portgroups.AddressGate.
type AddressGate struct {
	Reader  client.Reader
	Neutron gateAPI
}

// ReleaseAddresses takes the port's addresses out of the address groups
// of the peers the KuryrPort's pod is not one of. Without address-group
// peers it reads nothing.
func (g AddressGate) ReleaseAddresses(ctx context.Context, kp *kuryrv1.KuryrPort, addresses []string) error {
	var knps kuryrv1.KuryrNetworkPolicyList
	if err := g.Reader.List(ctx, &knps, client.UnsafeDisableDeepCopy); err != nil {
		return fmt.Errorf("list KuryrNetworkPolicies: %w", err)
	}
	p, nsLabels, err := g.podOf(ctx, kp)
	if err != nil {
		return err
	}
	// The groups that must not hold the pod's addresses: those of peers it
	// is not one of, and those no live policy names any more.
	foreign, own := map[string]bool{}, map[string]bool{}
	for i := range knps.Items {
		knp := &knps.Items[i]
		for key, id := range knp.Status.PeerAddressGroups {
			i := slices.IndexFunc(knp.Spec.Peers, func(pp kuryrv1.PolicyPeer) bool { return pp.Key == key })
			if i >= 0 && knp.DeletionTimestamp.IsZero() && peerOf(knp.Spec.Peers[i]).Matches(p, nsLabels) {
				own[id] = true
			} else {
				foreign[id] = true
			}
		}
	}
	if len(foreign) == 0 {
		return nil
	}
	ags, err := g.Neutron.ListAddressGroups(ctx)
	if err != nil {
		return err
	}
	for _, ag := range ags {
		if !foreign[ag.ID] || own[ag.ID] {
			continue
		}
		var held []string
		for _, a := range ag.Addresses {
			if p, err := neutron.HostPrefix(a); err == nil && slices.Contains(addresses, p) {
				held = append(held, p)
			}
		}
		if len(held) == 0 {
			continue
		}
		if err := g.remove(ctx, ag.ID, held); err != nil {
			return err
		}
		log.FromContext(ctx).Info("address taken out of a peer's address group before its new pod starts",
			"addressGroup", ag.ID, "addresses", held)
	}
	return nil
}

// podOf is the KuryrPort's pod (an unlabelled pod of its namespace when
// the cache has no such pod, as PodGroups takes it) and its namespace's
// labels.
func (g AddressGate) podOf(ctx context.Context, kp *kuryrv1.KuryrPort) (Pod, map[string]string, error) {
	p := Pod{Namespace: kp.Namespace}
	var pod corev1.Pod
	if err := g.Reader.Get(ctx, types.NamespacedName{Namespace: kp.Namespace, Name: kp.Name}, &pod); err == nil &&
		string(pod.UID) == kp.Spec.PodUID {
		p.Labels = pod.Labels
	}
	var ns corev1.Namespace
	if err := g.Reader.Get(ctx, types.NamespacedName{Name: kp.Namespace}, &ns); err != nil {
		return p, nil, fmt.Errorf("namespace of pod %s/%s: %w", kp.Namespace, kp.Name, err)
	}
	return p, ns.Labels, nil
}

// remove takes addresses out of a group; Neutron refuses the whole call
// when one went meanwhile (404), so then they go one by one.
func (g AddressGate) remove(ctx context.Context, id string, addresses []string) error {
	_, err := g.Neutron.RemoveAddresses(ctx, id, addresses)
	if !neutron.IsNotFound(err) || len(addresses) == 1 {
		if neutron.IsNotFound(err) {
			return nil
		}
		return err
	}
	for _, a := range addresses {
		if _, err := g.Neutron.RemoveAddresses(ctx, id, []string{a}); err != nil && !neutron.IsNotFound(err) {
			return err
		}
	}
	return nil
}
