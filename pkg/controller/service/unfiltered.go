package service

import (
	"context"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/kuryr-k8s/kuryr/pkg/controller/nested"
)

// nodeModes says how a node's pods are plugged (nested.Modes).
type nodeModes interface {
	Of(ctx context.Context, node string) (string, error)
}

// ReasonSourceRangesNotEnforced: a LoadBalancer Service's
// loadBalancerSourceRanges do not apply to some of its endpoints.
const ReasonSourceRangesNotEnforced = "SourceRangesNotEnforced"

// restricted says whether kuryr restricts a Service's external sources: a
// LoadBalancer Service of kuryr's class with loadBalancerSourceRanges,
// where the pods' own groups do not admit everyone anyway (warn says so).
// Pure.
func restricted(svc *corev1.Service, s Settings) bool {
	return svc.Spec.Type == corev1.ServiceTypeLoadBalancer && len(svc.Spec.LoadBalancerSourceRanges) > 0 &&
		!foreignClass(svc, s.Class) && s.Exposure == ""
}

// namedBytes: a Warning's list of endpoints stays within this many bytes
// (an Event's note is refused past 1 kB, and names can be 253 long).
const namedBytes = 600

// named lists names within namedBytes, and how many more. Pure.
func named(names []string) string {
	out := ""
	for i, n := range names {
		next := n
		if i > 0 {
			next = out + ", " + n
		}
		if len(next) > namedBytes {
			if out == "" {
				out = n[:namedBytes] + "…"
				i++
			}
			if i == len(names) {
				return out
			}
			return fmt.Sprintf("%s and %d more", out, len(names)-i)
		}
		out = next
	}
	return out
}

// endpointNodes are the nodes the slices' endpoints run on. Pure.
func endpointNodes(eps []discoveryv1.EndpointSlice) []string {
	var out []string
	for _, s := range eps {
		for _, e := range s.Endpoints {
			if e.NodeName != nil && !slices.Contains(out, *e.NodeName) {
				out = append(out, *e.NodeName)
			}
		}
	}
	slices.Sort(out)
	return out
}

// unfiltered are the endpoints (pod names, or addresses) on the given
// nodes. Pure.
func unfiltered(eps []discoveryv1.EndpointSlice, on map[string]bool) []string {
	var out []string
	for _, s := range eps {
		for _, e := range s.Endpoints {
			if e.NodeName == nil || !on[*e.NodeName] {
				continue
			}
			name := strings.Join(e.Addresses, ",")
			if e.TargetRef != nil {
				name = e.TargetRef.Name
			}
			out = append(out, name+" on "+*e.NodeName)
		}
	}
	slices.Sort(out)
	return out
}

// warnUnfiltered gives a Warning when a Service restricting its sources
// has endpoints on nested-macvlan nodes: a macvlan pod is filtered by its
// VM's port's security groups alone, so the Service's source group, which
// kuryr gives its endpoints' ports, does not apply to them.
func (r *Reconciler) warnUnfiltered(ctx context.Context, svc *corev1.Service, eps []discoveryv1.EndpointSlice) {
	if r.Modes == nil || !restricted(svc, r.Settings) {
		return
	}
	macvlan := map[string]bool{}
	for _, node := range endpointNodes(eps) {
		mode, err := r.Modes.Of(ctx, node)
		if err != nil {
			log.FromContext(ctx).Info("a node's mode not read: its endpoints are not checked for source ranges",
				"node", node, "reason", err.Error())
			continue
		}
		macvlan[node] = mode == nested.ModeMacvlan
	}
	if eps := unfiltered(eps, macvlan); len(eps) > 0 {
		r.Recorder.Eventf(svc, nil, corev1.EventTypeWarning, ReasonSourceRangesNotEnforced, "Translate", "%s",
			fmt.Sprintf("loadBalancerSourceRanges are not enforced on endpoints %s: they are nested-macvlan pods, "+
				"filtered by their VM's port's security groups alone (use nested-vlan for per-pod security groups)",
				named(eps)))
	}
}
