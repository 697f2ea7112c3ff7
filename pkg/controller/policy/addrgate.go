package policy

import (
	"context"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	kuryrv1 "github.com/kuryr-k8s/kuryr/api/v1"
	"github.com/kuryr-k8s/kuryr/pkg/names"
	"github.com/kuryr-k8s/kuryr/pkg/neutron"
)

// gateAPI is the Neutron seam of the address gate.
type gateAPI interface {
	ListAddressGroups(ctx context.Context, project string) ([]neutron.AddressGroup, error)
	RemoveAddresses(ctx context.Context, id string, addresses []string) (*neutron.AddressGroup, error)
}

// AddressGate keeps an address from admitting anyone but the pod that has
// it: the policy reconciler takes a gone pod's address out of its peers'
// groups when it sees the pod's KuryrPort go, which can be after Neutron
// gave the address to someone else (a pod taking the port from a pool, a
// new port, a VM). So the KuryrPort reconciler asks the gate to take a
// port's addresses out of every peer group but its pod's own before the
// KuryrPort gets them (ReleaseAddresses), and out of every peer group
// before the port goes back to a pool or is deleted (ForgetAddresses). It
// implements portgroups.AddressGate. It looks at every peer address group
// of the cluster (by name and description), recorded or not, under the
// peer's lock shared with the policy reconciler.
type AddressGate struct {
	Reader    client.Reader
	Neutron   gateAPI
	Locks     *PeerLocks
	Cluster   string
	ProjectID string
}

// ReleaseAddresses takes the port's addresses out of the address groups
// of the peers the KuryrPort's pod is not one of. Without address-group
// peers it reads nothing from Neutron.
func (g AddressGate) ReleaseAddresses(ctx context.Context, kp *kuryrv1.KuryrPort, addresses []string) error {
	knps, err := g.policies(ctx)
	if err != nil || knps == nil {
		return err
	}
	p, nsLabels, err := g.podOf(ctx, kp)
	if err != nil {
		return err
	}
	own := map[string]bool{}
	for i := range knps {
		if !knps[i].DeletionTimestamp.IsZero() {
			continue
		}
		for _, pp := range knps[i].Spec.Peers {
			if peerOf(pp).Matches(p, nsLabels) {
				own[pp.Key] = true
			}
		}
	}
	return g.takeOut(ctx, addresses, own)
}

// ForgetAddresses takes addresses out of every peer address group: their
// port is about to go back to a pool or be deleted.
func (g AddressGate) ForgetAddresses(ctx context.Context, addresses []string) error {
	knps, err := g.policies(ctx)
	if err != nil || knps == nil || len(addresses) == 0 {
		return err
	}
	return g.takeOut(ctx, addresses, nil)
}

// policies are the KuryrNetworkPolicies, or nil when none has (or is
// making) address-group peers.
func (g AddressGate) policies(ctx context.Context) ([]kuryrv1.KuryrNetworkPolicy, error) {
	var knps kuryrv1.KuryrNetworkPolicyList
	if err := g.Reader.List(ctx, &knps, client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("list KuryrNetworkPolicies: %w", err)
	}
	if !slices.ContainsFunc(knps.Items, func(k kuryrv1.KuryrNetworkPolicy) bool {
		return len(k.Status.PeerAddressGroups) > 0 || k.Status.PeerKind == kuryrv1.PeerKindAddressGroups
	}) {
		return nil, nil
	}
	return knps.Items, nil
}

// takeOut removes the addresses from the cluster's peer address groups
// but those of the peers in keep.
func (g AddressGate) takeOut(ctx context.Context, addresses []string, keep map[string]bool) error {
	ags, err := g.Neutron.ListAddressGroups(ctx, g.ProjectID)
	if err != nil {
		return err
	}
	for _, ag := range ags {
		key, ok := strings.CutPrefix(ag.Name, names.PeerGroupPrefix)
		if !ok || ag.Description != names.PeerAddressGroupDescription(g.Cluster) || keep[key] {
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
		if err := g.remove(ctx, key, ag.ID, held); err != nil {
			return err
		}
		log.FromContext(ctx).Info("addresses taken out of a peer's address group", "addressGroup", ag.ID, "peer", key,
			"addresses", held)
	}
	return nil
}

// remove takes addresses out of a group under the peer's lock; Neutron
// refuses the whole call when one went meanwhile (404), so then they go
// one by one.
func (g AddressGate) remove(ctx context.Context, key, id string, addresses []string) error {
	if g.Locks != nil {
		defer g.Locks.lock("ag/" + key)()
	}
	_, err := g.Neutron.RemoveAddresses(ctx, id, addresses)
	if !neutron.IsNotFound(err) {
		return err
	}
	for _, a := range addresses {
		if _, err := g.Neutron.RemoveAddresses(ctx, id, []string{a}); err != nil && !neutron.IsNotFound(err) {
			return err
		}
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
