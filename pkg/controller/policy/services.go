package policy

import (
	"net/netip"
	"slices"
	"strings"

	kuryrv1 "github.com/kuryr-k8s/kuryr/api/v1"
)

// ServiceRules are the egress rules a policy needs towards Service VIPs.
// OVN evaluates a pod's egress ACLs before its load balancer translates
// the VIP to a backend, so a pod allowed to reach a peer's pods on a port
// must also be allowed to the VIP and Service port in front of them: one
// rule per (VIP, Service port) whose members include a pod of the peer on
// a port the rule allows. Rules to CIDRs (ipBlock, or no peer at all)
// are left as written. Pure.
//
// A member counts as a peer's pod only when its targetRef names a pod of
// the Service's own namespace and its address is that pod's: whoever may
// write a selector-less Service's EndpointSlice could otherwise name any
// pod and open egress through the VIP to addresses of their choosing.
func ServiceRules(d Desired, klbs []kuryrv1.KuryrLoadBalancer, v PodsView) []kuryrv1.PolicyRule {
	pods := map[string]memberPod{}
	for i := range v.Pods {
		p := &v.Pods[i]
		mp := memberPod{Pod: Pod{Namespace: p.Namespace, Labels: p.Labels}, ips: map[string]bool{}}
		for _, ip := range p.Status.PodIPs {
			mp.ips[ip.IP] = true
		}
		pods[p.Namespace+"/"+p.Name] = mp
	}
	var out []kuryrv1.PolicyRule
	seen := map[kuryrv1.PolicyRule]bool{}
	for _, r := range d.Rules {
		if r.Direction != Egress || r.Peer == nil {
			continue
		}
		for i := range klbs {
			for _, pr := range vipRules(r, &klbs[i], pods, v.NamespaceLabels) {
				if !seen[pr] {
					seen[pr] = true
					out = append(out, pr)
				}
			}
		}
	}
	slices.SortFunc(out, func(a, b kuryrv1.PolicyRule) int { return strings.Compare(ruleKey(a), ruleKey(b)) })
	return out
}

// memberPod is a pod as a load balancer member: its labels and addresses.
type memberPod struct {
	Pod
	ips map[string]bool
}

// podOf is the pod a member really is: named by its targetRef, in the
// Service's namespace, at one of the pod's own addresses.
func podOf(m kuryrv1.LoadBalancerMember, klb *kuryrv1.KuryrLoadBalancer, pods map[string]memberPod) (Pod, bool) {
	ns, _, ok := strings.Cut(m.TargetRef, "/")
	if !ok || ns != klb.Namespace {
		return Pod{}, false
	}
	p, ok := pods[m.TargetRef]
	if !ok || !p.ips[m.IP] {
		return Pod{}, false
	}
	return p.Pod, true
}

func vipRules(r Rule, klb *kuryrv1.KuryrLoadBalancer, pods map[string]memberPod, nsLabels map[string]map[string]string) []kuryrv1.PolicyRule {
	vip, err := netip.ParseAddr(klb.Spec.IP)
	if err != nil || !klb.DeletionTimestamp.IsZero() {
		return nil
	}
	var out []kuryrv1.PolicyRule
	for _, lp := range klb.Spec.Ports {
		proto := strings.ToLower(lp.Protocol)
		if r.Protocol != "" && r.Protocol != proto {
			continue
		}
		for _, m := range lp.Members {
			pod, ok := podOf(m, klb, pods)
			if !ok || !r.Peer.Matches(pod, nsLabels[pod.Namespace]) {
				continue
			}
			if r.PortMin != 0 && (int(m.Port) < r.PortMin || int(m.Port) > r.PortMax) {
				continue
			}
			out = append(out, kuryrv1.PolicyRule{Direction: Egress, Protocol: proto, PortMin: int(lp.Port), PortMax: int(lp.Port),
				CIDR: netip.PrefixFrom(vip, vip.BitLen()).String()})
			break
		}
	}
	return out
}

func ruleKey(r kuryrv1.PolicyRule) string {
	return Rule{Direction: r.Direction, Protocol: r.Protocol, PortMin: r.PortMin, PortMax: r.PortMax, CIDR: r.CIDR + r.Peer}.Key()
}
