package policy

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kuryrv1 "github.com/kuryr-k8s/kuryr/api/v1"
	"github.com/kuryr-k8s/kuryr/pkg/controller/portgroups"
)

// PodGroups tells the KuryrPort reconciler which security groups a pod's
// port carries for NetworkPolicies: the groups of the policies that
// select the pod, and the open group of each direction none isolates.
type PodGroups struct {
	Reader client.Reader
	Open   *OpenGroups
	// Addresses: the gate of the peers' address groups.
	Addresses AddressGate
}

// ReleaseAddresses implements portgroups.AddressGate.
func (s PodGroups) ReleaseAddresses(ctx context.Context, kp *kuryrv1.KuryrPort, addresses []string) error {
	if s.Addresses.Neutron == nil {
		return nil
	}
	return s.Addresses.ReleaseAddresses(ctx, kp, addresses)
}

// ForgetAddresses implements portgroups.AddressGate.
func (s PodGroups) ForgetAddresses(ctx context.Context, addresses []string) error {
	if s.Addresses.Neutron == nil {
		return nil
	}
	return s.Addresses.ForgetAddresses(ctx, addresses)
}

// Groups implements portgroups.GroupSource. While a policy that selects
// the pod has no group yet, it answers a portgroups.GroupsNotReady with the
// groups that fail closed on that policy's directions.
func (s PodGroups) Groups(ctx context.Context, kp *kuryrv1.KuryrPort) ([]string, error) {
	// A KuryrPort is made for a pod already in the cache; one without its
	// pod (made by hand, or its pod gone) is an unlabelled pod of its
	// namespace: the namespace's policies that select every pod apply.
	var pod corev1.Pod
	err := s.Reader.Get(ctx, types.NamespacedName{Namespace: kp.Namespace, Name: kp.Name}, &pod)
	switch {
	case apierrors.IsNotFound(err) || (err == nil && string(pod.UID) != kp.Spec.PodUID):
		pod = corev1.Pod{}
		pod.Namespace = kp.Namespace
	case err != nil:
		return nil, fmt.Errorf("pod of KuryrPort %s/%s: %w", kp.Namespace, kp.Name, err)
	}
	var nps networkingv1.NetworkPolicyList
	if err := s.Reader.List(ctx, &nps, client.InNamespace(kp.Namespace)); err != nil {
		return nil, fmt.Errorf("list NetworkPolicies: %w", err)
	}
	var knps kuryrv1.KuryrNetworkPolicyList
	if err := s.Reader.List(ctx, &knps, client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("list KuryrNetworkPolicies: %w", err)
	}
	var ns corev1.Namespace
	if err := s.Reader.Get(ctx, types.NamespacedName{Name: kp.Namespace}, &ns); err != nil {
		return nil, fmt.Errorf("namespace of pod %s/%s: %w", kp.Namespace, kp.Name, err)
	}
	in, out, err := s.Open.IDs(ctx)
	if err != nil {
		return nil, err
	}
	policies := make([]*networkingv1.NetworkPolicy, 0, len(nps.Items))
	for i := range nps.Items {
		if nps.Items[i].DeletionTimestamp.IsZero() {
			policies = append(policies, &nps.Items[i])
		}
	}
	p := Pod{Namespace: pod.Namespace, Labels: pod.Labels}
	groups, notReady := Groups(p, policies, groupOf(kp.Namespace, knps.Items), in, out)
	groups = append(groups, PeerGroupsOf(p, ns.Labels, knps.Items)...)
	slices.Sort(groups)
	groups = slices.Compact(groups)
	if notReady != nil {
		return nil, &portgroups.GroupsNotReady{Groups: groups, Cause: notReady}
	}
	return groups, nil
}

// DefaultGroups implements portgroups.Defaults: a pod no policy selects
// carries the open group of each direction.
func (s PodGroups) DefaultGroups(ctx context.Context) ([]string, error) {
	in, out, err := s.Open.IDs(ctx)
	if err != nil {
		return nil, err
	}
	return []string{in, out}, nil
}

// PeerGroupsOf are the groups of the peers a pod is one of, among the
// peers of live policies whose group exists and whose rules name security
// groups (not address groups). A peer whose group is not made yet leaves
// the pod out of it: the rules naming it are not made either. Pure.
func PeerGroupsOf(p Pod, nsLabels map[string]string, knps []kuryrv1.KuryrNetworkPolicy) []string {
	var out []string
	for i := range knps {
		knp := &knps[i]
		if !knp.DeletionTimestamp.IsZero() || knp.Status.PeerKind == kuryrv1.PeerKindAddressGroups {
			continue
		}
		for _, pp := range knp.Spec.Peers {
			if g := knp.Status.PeerGroups[pp.Key]; g != "" && peerOf(pp).Matches(p, nsLabels) {
				out = append(out, g)
			}
		}
	}
	return out
}

// groupOf finds a policy of the namespace's security group in the
// KuryrNetworkPolicy it owns ("" while there is none).
func groupOf(namespace string, knps []kuryrv1.KuryrNetworkPolicy) func(*networkingv1.NetworkPolicy) string {
	byName := map[string]*kuryrv1.KuryrNetworkPolicy{}
	for i := range knps {
		if knps[i].Namespace == namespace {
			byName[knps[i].Name] = &knps[i]
		}
	}
	return func(np *networkingv1.NetworkPolicy) string {
		knp, ok := byName[np.Name]
		if !ok || !knp.DeletionTimestamp.IsZero() || !metav1.IsControlledBy(knp, np) {
			return ""
		}
		return knp.Status.SecurityGroupID
	}
}
