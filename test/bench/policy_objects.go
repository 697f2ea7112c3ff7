package main

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func team(i int) string { return fmt.Sprintf("t%02d", i) }

// pods: two servers (/bin/serve, HTTP on 8080) and two probe clients, each
// server on another node than its client; the rest idle pods (a sleep)
// spread over the namespaces and nodes, in tiers web, api and db that the
// filler policies select, one in ten also labelled role=client (a peer
// of srv-b's policy).
func (b *policyBench) pods() []*corev1.Pod {
	nn, nodes := len(b.namespaces), b.e.Nodes
	ns := func(i int) string { return b.namespaces[i%nn] }
	out := []*corev1.Pod{
		b.pod(ns(0), "srv-a", nodes[0], map[string]string{"app": "srv-a"}, true),
		b.pod(ns(2), "cli-a", nodes[1%len(nodes)], map[string]string{"probe": "a"}, false),
		b.pod(ns(1), "srv-b", nodes[1%len(nodes)], map[string]string{"app": "srv-b"}, true),
		b.pod(ns(3), "cli-b", nodes[0], map[string]string{"probe": "b"}, false),
	}
	tiers := []string{"web", "api", "db"}
	for i, n := 0, b.sz.pods-len(out); i < n; i++ {
		k := i / nn // the pod's rank in its namespace
		labels := map[string]string{"tier": tiers[k%len(tiers)]}
		if k%10 == 3 {
			labels["role"] = "client"
		}
		out = append(out, b.pod(ns(i), fmt.Sprintf("p-%03d", i), nodes[i%len(nodes)], labels, false))
	}
	return out
}

func (b *policyBench) pod(ns, name, node string, labels map[string]string, serve bool) *corev1.Pod {
	var grace int64
	labels["bench"] = b.run
	c := corev1.Container{Name: "app", Image: b.e.TestImage, ImagePullPolicy: corev1.PullNever}
	if !serve {
		c.Command = []string{"sleep", "2147483647"}
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels},
		Spec: corev1.PodSpec{NodeName: node, TerminationGracePeriodSeconds: &grace, DNSPolicy: corev1.DNSDefault,
			Containers: []corev1.Container{c}},
	}
}

// policies: srv-a-deny (srv-a isolated, nothing admitted), srv-b-clients
// (srv-b admits TCP 8080 from role=client pods of the run's namespaces),
// and filler policies over the tiers: podSelector and namespaceSelector
// peers (alone, ANDed, matchExpressions), ipBlock with except, single
// ports and an endPort range, ingress and egress. None selects the
// probe pods.
func (b *policyBench) policies() []*networkingv1.NetworkPolicy {
	out := []*networkingv1.NetworkPolicy{
		b.policy(b.srvA.Namespace, "srv-a-deny", sel("app", "srv-a"), nil, nil),
		b.policy(b.srvB.Namespace, "srv-b-clients", sel("app", "srv-b"),
			[]networkingv1.NetworkPolicyIngressRule{{From: []networkingv1.NetworkPolicyPeer{
				{NamespaceSelector: sel("bench", b.run), PodSelector: sel("role", "client")}},
				Ports: []networkingv1.NetworkPolicyPort{tcp(8080, 0)}}}, nil),
	}
	nn := len(b.namespaces)
	for j := 0; len(out) < b.sz.policies; j++ {
		i := j % nn
		ns, name := b.namespaces[i], fmt.Sprintf("fill-%02d", j)
		teams := func(k ...int) *metav1.LabelSelector {
			s := sel("bench", b.run)
			var values []string
			for _, d := range k {
				values = append(values, team((i+d)%nn))
			}
			s.MatchExpressions = []metav1.LabelSelectorRequirement{{Key: "team", Operator: metav1.LabelSelectorOpIn, Values: values}}
			return s
		}
		var np *networkingv1.NetworkPolicy
		switch j % 5 {
		case 0: // db from the namespace's api tier
			np = b.policy(ns, name, sel("tier", "db"), ingress(tcp(5432, 0), networkingv1.NetworkPolicyPeer{PodSelector: sel("tier", "api")}), nil)
		case 1: // api from the web tier of the next team and from all of the team after
			np = b.policy(ns, name, sel("tier", "api"), ingress(tcp(8080, 0),
				networkingv1.NetworkPolicyPeer{NamespaceSelector: teams(1), PodSelector: sel("tier", "web")},
				networkingv1.NetworkPolicyPeer{NamespaceSelector: teams(2)}), nil)
			np.Spec.Ingress[0].Ports = append(np.Spec.Ingress[0].Ports, tcp(8443, 0))
		case 2: // web from an outside range, one subnet excepted
			np = b.policy(ns, name, sel("tier", "web"), ingress(tcp(443, 0), networkingv1.NetworkPolicyPeer{
				IPBlock: &networkingv1.IPBlock{CIDR: "192.168.0.0/16", Except: []string{"192.168.1.0/24"}}}), nil)
		case 3: // web egress to the api tier of two teams (a port range) and DNS
			np = b.policy(ns, name, sel("tier", "web"), nil, []networkingv1.NetworkPolicyEgressRule{
				{To: []networkingv1.NetworkPolicyPeer{{NamespaceSelector: teams(0, 1), PodSelector: sel("tier", "api")}},
					Ports: []networkingv1.NetworkPolicyPort{tcp(8080, 8090)}},
				{To: []networkingv1.NetworkPolicyPeer{{IPBlock: &networkingv1.IPBlock{CIDR: "10.0.0.0/8"}}},
					Ports: []networkingv1.NetworkPolicyPort{udp(53)}}})
		default: // api both ways: from every web pod of the run, to the namespace's db tier
			np = b.policy(ns, name, sel("tier", "api"),
				ingress(tcp(8080, 0), networkingv1.NetworkPolicyPeer{NamespaceSelector: sel("bench", b.run), PodSelector: sel("tier", "web")}),
				[]networkingv1.NetworkPolicyEgressRule{{To: []networkingv1.NetworkPolicyPeer{{PodSelector: sel("tier", "db")}},
					Ports: []networkingv1.NetworkPolicyPort{tcp(5432, 0)}}})
		}
		out = append(out, np)
	}
	return out
}

// flipPolicy admits TCP port to srv-a from cli-a (its pod and namespace
// labels ANDed); port 8081 admits nothing srv-a serves.
func (b *policyBench) flipPolicy(name string, port int32) *networkingv1.NetworkPolicy {
	from := networkingv1.NetworkPolicyPeer{PodSelector: sel("probe", "a"), NamespaceSelector: sel("bench", b.run)}
	from.NamespaceSelector.MatchLabels["team"] = b.teams[b.cliA.Namespace]
	return b.policy(b.srvA.Namespace, name, sel("app", "srv-a"), ingress(tcp(port, 0), from), nil)
}

// policy: ingress nil and egress nil isolate ingress with no rule.
func (b *policyBench) policy(ns, name string, pods *metav1.LabelSelector, in []networkingv1.NetworkPolicyIngressRule, out []networkingv1.NetworkPolicyEgressRule) *networkingv1.NetworkPolicy {
	np := &networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: networkingv1.NetworkPolicySpec{PodSelector: *pods, Ingress: in, Egress: out}}
	if in != nil || out == nil {
		np.Spec.PolicyTypes = append(np.Spec.PolicyTypes, networkingv1.PolicyTypeIngress)
	}
	if out != nil {
		np.Spec.PolicyTypes = append(np.Spec.PolicyTypes, networkingv1.PolicyTypeEgress)
	}
	return np
}

func ingress(port networkingv1.NetworkPolicyPort, from ...networkingv1.NetworkPolicyPeer) []networkingv1.NetworkPolicyIngressRule {
	return []networkingv1.NetworkPolicyIngressRule{{From: from, Ports: []networkingv1.NetworkPolicyPort{port}}}
}

func sel(key, value string) *metav1.LabelSelector {
	return &metav1.LabelSelector{MatchLabels: map[string]string{key: value}}
}

// tcp: a port, or the range port-end when end > 0.
func tcp(port, end int32) networkingv1.NetworkPolicyPort {
	proto, p := corev1.ProtocolTCP, intstr.FromInt32(port)
	np := networkingv1.NetworkPolicyPort{Protocol: &proto, Port: &p}
	if end > 0 {
		np.EndPort = &end
	}
	return np
}

func udp(port int32) networkingv1.NetworkPolicyPort {
	proto, p := corev1.ProtocolUDP, intstr.FromInt32(port)
	return networkingv1.NetworkPolicyPort{Protocol: &proto, Port: &p}
}

// create creates a policy and records its UID (its Neutron groups are
// named after it).
func (b *policyBench) create(ctx context.Context, np *networkingv1.NetworkPolicy) (*networkingv1.NetworkPolicy, error) {
	got, err := b.e.Kube.NetworkingV1().NetworkPolicies(np.Namespace).Create(ctx, np, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("create policy %s/%s: %w", np.Namespace, np.Name, err)
	}
	b.mu.Lock()
	b.uids[string(got.UID)] = true
	b.mu.Unlock()
	return got, nil
}
