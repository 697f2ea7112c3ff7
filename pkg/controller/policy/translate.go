// Package policy turns NetworkPolicies into Neutron security groups: one
// group per policy, carried by the ports of the pods the policy selects,
// whose rules name their peers by address group (the pods a selector
// picks), so that a pod joining or leaving a selector is one address-group
// change, not a rewrite of rules.
package policy

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"sort"
	"strings"

	"go4.org/netipx"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Directions of a rule, as Neutron spells them.
const (
	Ingress = "ingress"
	Egress  = "egress"
)

// Peer is the set of pods one NetworkPolicy peer selects: pods matching
// Pods (nil: all) in the namespaces matching Namespaces, or, when
// Namespaces is nil, in the policy's own namespace. It becomes an address
// group holding the pods' addresses.
type Peer struct {
	Namespace  string                `json:"namespace,omitempty"` // the policy's, when Namespaces is nil
	Namespaces *metav1.LabelSelector `json:"namespaces,omitempty"`
	Pods       *metav1.LabelSelector `json:"pods,omitempty"`
}

// Key identifies a peer: equal peers share one address group.
func (p Peer) Key() string {
	b, _ := json.Marshal(p) // a struct of selectors always marshals
	return string(b)
}

// Rule is one allowed flow of a policy: a protocol ("" any) and port
// range (0-0 every port) from (ingress) or to (egress) a remote, which is
// a CIDR or a peer.
type Rule struct {
	Direction string
	Protocol  string
	PortMin   int
	PortMax   int
	CIDR      string // set, or Peer is
	Peer      *Peer
}

// Key identifies a rule by what it allows.
func (r Rule) Key() string {
	remote := r.CIDR
	if r.Peer != nil {
		remote = r.Peer.Key()
	}
	return fmt.Sprintf("%s/%s/%d-%d/%s", r.Direction, r.Protocol, r.PortMin, r.PortMax, remote)
}

// Port is a resolved port: a protocol and one number.
type Port struct {
	Protocol corev1.Protocol
	Number   int32
}

// NamedPorts resolves a container port name to the numbers it has on the
// pods concerned: for ingress, the pods the policy selects; for egress,
// the peer's pods (nil peer: every pod the policy may reach).
type NamedPorts func(direction, name string, peer *Peer) []Port

// Desired is what a NetworkPolicy asks of Neutron.
type Desired struct {
	// Ingress and Egress: the selected pods are isolated in that direction
	// (they lose the open group and get only what the rules allow).
	Ingress, Egress bool
	Rules           []Rule
	// Warnings say what could not be expressed (never silently dropped).
	Warnings []string
}

// Translate computes a NetworkPolicy's rules. Pure.
func Translate(np *networkingv1.NetworkPolicy, named NamedPorts) Desired {
	var d Desired
	d.Ingress, d.Egress = policyTypes(np)
	seen := map[string]bool{}
	add := func(rs []Rule) {
		for _, r := range rs {
			if !seen[r.Key()] {
				seen[r.Key()] = true
				d.Rules = append(d.Rules, r)
			}
		}
	}
	if d.Ingress {
		for _, in := range np.Spec.Ingress {
			rs, ws := direction(Ingress, np.Namespace, in.From, in.Ports, named)
			add(rs)
			d.Warnings = append(d.Warnings, ws...)
		}
	}
	if d.Egress {
		for _, out := range np.Spec.Egress {
			rs, ws := direction(Egress, np.Namespace, out.To, out.Ports, named)
			add(rs)
			d.Warnings = append(d.Warnings, ws...)
		}
	}
	sort.Slice(d.Rules, func(i, j int) bool { return d.Rules[i].Key() < d.Rules[j].Key() })
	return d
}

// policyTypes: the listed types, or Ingress always and Egress when the
// policy has egress rules (the API's defaulting).
func policyTypes(np *networkingv1.NetworkPolicy) (ingress, egress bool) {
	if len(np.Spec.PolicyTypes) == 0 {
		return true, len(np.Spec.Egress) > 0
	}
	for _, t := range np.Spec.PolicyTypes {
		switch t {
		case networkingv1.PolicyTypeIngress:
			ingress = true
		case networkingv1.PolicyTypeEgress:
			egress = true
		}
	}
	return ingress, egress
}

// everyone: a rule without peers admits every address of both families.
var everyone = []string{"0.0.0.0/0", "::/0"}

func direction(dir, ns string, peers []networkingv1.NetworkPolicyPeer, ports []networkingv1.NetworkPolicyPort, named NamedPorts) ([]Rule, []string) {
	var rules []Rule
	var warnings []string
	type remote struct {
		cidr string
		peer *Peer
	}
	var remotes []remote
	if len(peers) == 0 {
		for _, c := range everyone {
			remotes = append(remotes, remote{cidr: c})
		}
	}
	for _, p := range peers {
		switch {
		case p.IPBlock != nil:
			cidrs, err := blockCIDRs(p.IPBlock)
			if err != nil {
				warnings = append(warnings, err.Error())
			}
			for _, c := range cidrs {
				remotes = append(remotes, remote{cidr: c})
			}
		case p.PodSelector != nil || p.NamespaceSelector != nil:
			peer := &Peer{Namespaces: p.NamespaceSelector, Pods: p.PodSelector}
			if peer.Namespaces == nil {
				peer.Namespace = ns
			}
			remotes = append(remotes, remote{peer: peer})
		}
	}
	for _, p := range ports {
		if p.Port != nil && p.Port.StrVal == "" && p.EndPort != nil && *p.EndPort < p.Port.IntVal {
			warnings = append(warnings, fmt.Sprintf("endPort %d is below port %d: the range allows nothing", *p.EndPort, p.Port.IntVal))
		}
	}
	for _, r := range remotes {
		for _, pr := range portRanges(dir, ports, r.peer, named) {
			pr.Direction, pr.CIDR, pr.Peer = dir, r.cidr, r.peer
			rules = append(rules, pr)
		}
	}
	return rules, warnings
}

// portRanges are a rule's ports as Neutron protocol and range: every port
// when none is listed; a named port resolved over the pods concerned (a
// name no pod has allows nothing).
func portRanges(dir string, ports []networkingv1.NetworkPolicyPort, peer *Peer, named NamedPorts) []Rule {
	if len(ports) == 0 {
		return []Rule{{}}
	}
	var out []Rule
	for _, p := range ports {
		proto := corev1.ProtocolTCP
		if p.Protocol != nil {
			proto = *p.Protocol
		}
		switch {
		case p.Port == nil:
			out = append(out, Rule{Protocol: strings.ToLower(string(proto))})
		case p.Port.StrVal != "":
			for _, np := range named(dir, p.Port.StrVal, peer) {
				if np.Protocol == proto {
					out = append(out, Rule{Protocol: strings.ToLower(string(proto)), PortMin: int(np.Number), PortMax: int(np.Number)})
				}
			}
		default:
			end := p.Port.IntVal
			if p.EndPort != nil {
				if *p.EndPort < end {
					continue // warned by direction
				}
				end = *p.EndPort
			}
			out = append(out, Rule{Protocol: strings.ToLower(string(proto)), PortMin: int(p.Port.IntVal), PortMax: int(end)})
		}
	}
	return out
}

// blockCIDRs is an ipBlock as CIDRs: its cidr minus its excepts.
func blockCIDRs(b *networkingv1.IPBlock) ([]string, error) {
	base, err := netip.ParsePrefix(b.CIDR)
	if err != nil {
		return nil, fmt.Errorf("ipBlock cidr %q is not a CIDR: it allows nothing", b.CIDR)
	}
	var sb netipx.IPSetBuilder
	sb.AddPrefix(base.Masked())
	for _, e := range b.Except {
		ex, err := netip.ParsePrefix(e)
		if err != nil {
			return nil, fmt.Errorf("ipBlock except %q is not a CIDR: the block allows nothing", e)
		}
		sb.RemovePrefix(ex.Masked())
	}
	set, err := sb.IPSet()
	if err != nil {
		return nil, fmt.Errorf("ipBlock %s: %w", b.CIDR, err)
	}
	var out []string
	for _, p := range set.Prefixes() {
		out = append(out, p.String())
	}
	return out, nil
}
