package policy

import (
	"fmt"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// Pod is what membership needs of a pod: where it is and its labels.
type Pod struct {
	Namespace string
	Labels    map[string]string
}

// selector converts a label selector; nil selects everything. A selector
// the API server accepted always converts; one that does not selects
// nothing (never everything).
func selector(s *metav1.LabelSelector) labels.Selector {
	if s == nil {
		return labels.Everything()
	}
	sel, err := metav1.LabelSelectorAsSelector(s)
	if err != nil {
		return labels.Nothing()
	}
	return sel
}

// Selects says whether a policy applies to a pod (its podSelector, in its
// namespace). Pure.
func Selects(np *networkingv1.NetworkPolicy, p Pod) bool {
	return np.Namespace == p.Namespace && selector(&np.Spec.PodSelector).Matches(labels.Set(p.Labels))
}

// Matches says whether a pod is one of the peer's, given the labels of the
// pod's namespace. Pure.
func (peer Peer) Matches(p Pod, nsLabels map[string]string) bool {
	if peer.Namespaces == nil {
		if p.Namespace != peer.Namespace {
			return false
		}
	} else if !selector(peer.Namespaces).Matches(labels.Set(nsLabels)) {
		return false
	}
	return selector(peer.Pods).Matches(labels.Set(p.Labels))
}

// Groups are the security groups a pod's port carries for policies:
// the groups of the policies that select it, plus the open group of each
// direction no selecting policy isolates ("a pod selected by no policy in
// a direction is unrestricted in that direction"). A selecting policy
// whose group is not ready yet isolates its directions without admitting
// anything (fail closed): the groups are returned with an error naming
// it, for the caller to apply to a running pod, or to wait with a new one.
// Pure.
func Groups(p Pod, policies []*networkingv1.NetworkPolicy, groupOf func(*networkingv1.NetworkPolicy) string, openIngress, openEgress string) ([]string, error) {
	var out []string
	var notReady error
	isolatedIn, isolatedOut := false, false
	for _, np := range policies {
		if !Selects(np, p) {
			continue
		}
		in, eg := policyTypes(np)
		isolatedIn, isolatedOut = isolatedIn || in, isolatedOut || eg
		if g := groupOf(np); g != "" {
			out = append(out, g)
		} else if notReady == nil {
			notReady = fmt.Errorf("the security group of NetworkPolicy %s/%s is not ready", np.Namespace, np.Name)
		}
	}
	if !isolatedIn {
		out = append(out, openIngress)
	}
	if !isolatedOut {
		out = append(out, openEgress)
	}
	return out, notReady
}
