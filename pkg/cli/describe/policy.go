package describe

import (
	"context"
	"fmt"
	"io"
	"slices"

	"sigs.k8s.io/controller-runtime/pkg/client"

	kuryrv1 "github.com/kuryr-k8s/kuryr/api/v1"
	"github.com/kuryr-k8s/kuryr/pkg/cli/env"
	"github.com/kuryr-k8s/kuryr/pkg/cli/output"
	"github.com/kuryr-k8s/kuryr/pkg/names"
	"github.com/kuryr-k8s/kuryr/pkg/neutron"
)

// PolicyReport is a KuryrNetworkPolicy, its security group and its peer
// groups with their member ports.
type PolicyReport struct {
	Namespace      string                         `json:"namespace"`
	Name           string                         `json:"name"`
	Spec           kuryrv1.KuryrNetworkPolicySpec `json:"spec"`
	GroupID        string                         `json:"securityGroupId,omitempty"`
	Conditions     []Condition                    `json:"conditions,omitempty"`
	Group          *GroupView                     `json:"securityGroup,omitempty"`
	Peers          []PeerView                     `json:"peers,omitempty"`
	OpenStackError string                         `json:"openStackError,omitempty"`
}

// GroupView is a security group with its rules.
type GroupView struct {
	GroupRef
	Rules []RuleView `json:"rules"`
}

// RuleView is a rule; Remote is a prefix, or a group by peer key or name.
type RuleView struct {
	Direction string `json:"direction"`
	EtherType string `json:"ethertype"`
	Protocol  string `json:"protocol,omitempty"`
	Ports     string `json:"ports"`
	Remote    string `json:"remote,omitempty"`
}

// PeerView is a peer group and the ports that carry it (a security
// group), or an address group, its addresses and the ports that have them.
type PeerView struct {
	Key          string       `json:"key"`
	Group        GroupRef     `json:"group"`
	AddressGroup bool         `json:"addressGroup,omitempty"`
	Addresses    []string     `json:"addresses,omitempty"`
	Ports        []MemberPort `json:"ports,omitempty"`
}

// MemberPort is a port in a peer group.
type MemberPort struct {
	ID       string   `json:"id"`
	Name     string   `json:"name,omitempty"`
	FixedIPs []string `json:"fixedIPs,omitempty"`
}

// NetworkPolicy collects a policy's report; only a missing
// KuryrNetworkPolicy is an error.
func NetworkPolicy(ctx context.Context, e *env.Env, name string) (*PolicyReport, error) {
	var knp kuryrv1.KuryrNetworkPolicy
	if err := e.Client.Get(ctx, client.ObjectKey{Namespace: e.Namespace, Name: name}, &knp); err != nil {
		return nil, fmt.Errorf("KuryrNetworkPolicy %s/%s: %w", e.Namespace, name, err)
	}
	r := &PolicyReport{Namespace: knp.Namespace, Name: knp.Name, Spec: knp.Spec, GroupID: knp.Status.SecurityGroupID,
		Conditions: conditions(knp.Status.Conditions)}
	if err := r.neutron(ctx, e, knp.Status.PeerGroups, knp.Status.PeerAddressGroups); err != nil {
		r.OpenStackError = err.Error()
	}
	return r, nil
}

func (r *PolicyReport) neutron(ctx context.Context, e *env.Env, peerGroups, addressGroups map[string]string) error {
	if r.GroupID == "" && len(peerGroups)+len(addressGroups) == 0 {
		return nil
	}
	cloud, err := e.Cloud(ctx)
	if err != nil {
		return err
	}
	gn := &groupNames{nc: cloud.Neutron}
	peerOf := map[string]string{}
	for key, id := range peerGroups {
		peerOf[id] = key
	}
	for key, id := range addressGroups {
		peerOf[id] = key
	}
	if r.GroupID != "" {
		sg, err := cloud.Neutron.GetSecurityGroup(ctx, r.GroupID)
		if err != nil {
			return err
		}
		r.Group = &GroupView{GroupRef: GroupRef{ID: sg.ID, Name: sg.Name}, Rules: []RuleView{}}
		for _, rule := range sg.Rules {
			r.Group.Rules = append(r.Group.Rules, ruleView(ctx, rule, peerOf, gn))
		}
	}
	if len(peerGroups)+len(addressGroups) == 0 {
		return nil
	}
	// Ports are listed by cluster tag and filtered here: filtering by
	// security group is an extension not every Neutron has.
	ports, err := cloud.Neutron.ListPorts(ctx, []string{names.ClusterTag(cloud.Config.Kubernetes.ClusterName)}, "")
	if err != nil {
		return err
	}
	for _, key := range sortedKeys(peerGroups) {
		id := peerGroups[key]
		pv := PeerView{Key: key, Group: gn.ref(ctx, id)}
		for _, p := range ports {
			if slices.Contains(p.SecurityGroups, id) {
				mp := MemberPort{ID: p.ID, Name: p.Name}
				for _, ip := range p.FixedIPs {
					mp.FixedIPs = append(mp.FixedIPs, ip.IPAddress)
				}
				pv.Ports = append(pv.Ports, mp)
			}
		}
		r.Peers = append(r.Peers, pv)
	}
	for _, key := range sortedKeys(addressGroups) {
		r.Peers = append(r.Peers, addressPeer(ctx, cloud.Neutron, key, addressGroups[key], ports))
	}
	return nil
}

// addressPeer is a peer's address group and the ports that have its
// addresses.
func addressPeer(ctx context.Context, nc *neutron.Client, key, id string, ports []neutron.Port) PeerView {
	pv := PeerView{Key: key, Group: GroupRef{ID: id}, AddressGroup: true}
	ag, err := nc.GetAddressGroup(ctx, id)
	if err != nil {
		pv.Group.Name = "(" + err.Error() + ")"
		return pv
	}
	pv.Group.Name, pv.Addresses = ag.Name, ag.Addresses
	for _, p := range ports {
		mp := MemberPort{ID: p.ID, Name: p.Name}
		for _, ip := range p.FixedIPs {
			if a, err := neutron.HostPrefix(ip.IPAddress); err == nil && slices.Contains(ag.Addresses, a) {
				mp.FixedIPs = append(mp.FixedIPs, ip.IPAddress)
			}
		}
		if len(mp.FixedIPs) > 0 {
			pv.Ports = append(pv.Ports, mp)
		}
	}
	return pv
}

func ruleView(ctx context.Context, r neutron.Rule, peerOf map[string]string, gn *groupNames) RuleView {
	v := RuleView{Direction: r.Direction, EtherType: r.EtherType, Protocol: r.Protocol, Ports: "any",
		Remote: r.RemotePrefix}
	if r.PortMin != 0 || r.PortMax != 0 {
		v.Ports = fmt.Sprintf("%d-%d", r.PortMin, r.PortMax)
		if r.PortMin == r.PortMax {
			v.Ports = fmt.Sprint(r.PortMin)
		}
	}
	switch {
	case r.RemoteGroup != "" && peerOf[r.RemoteGroup] != "":
		v.Remote = "peer " + peerOf[r.RemoteGroup]
	case r.RemoteGroup != "":
		v.Remote = "group " + gn.ref(ctx, r.RemoteGroup).String()
	case r.RemoteAddressGroup != "" && peerOf[r.RemoteAddressGroup] != "":
		v.Remote = "peer " + peerOf[r.RemoteAddressGroup] + " (address group)"
	case r.RemoteAddressGroup != "":
		v.Remote = "address group " + r.RemoteAddressGroup
	}
	return v
}

func (r *PolicyReport) table(w io.Writer) error {
	_ = output.Section(w, "KuryrNetworkPolicy", "Name", r.Namespace+"/"+r.Name,
		"Ingress", fmt.Sprint(r.Spec.Ingress), "Egress", fmt.Sprint(r.Spec.Egress), "Security group", r.GroupID)
	rules := output.NewRows("direction", "protocol", "ports", "cidr", "peer")
	for _, x := range r.Spec.Rules {
		ports := ""
		if x.PortMin != 0 || x.PortMax != 0 {
			ports = fmt.Sprintf("%d-%d", x.PortMin, x.PortMax)
		}
		rules.Add(x.Direction, x.Protocol, ports, x.CIDR, x.Peer)
	}
	_ = output.Indented(w, "Spec rules", rules)
	_ = output.Indented(w, "Conditions", conditionRows(r.Conditions))
	problem(w, "OpenStack", r.OpenStackError)
	if g := r.Group; g != nil {
		t := output.NewRows("direction", "ethertype", "protocol", "ports", "remote")
		for _, x := range g.Rules {
			t.Add(x.Direction, x.EtherType, x.Protocol, x.Ports, x.Remote)
		}
		_ = output.Indented(w, "Security group "+g.String(), t)
	}
	for _, p := range r.Peers {
		t := output.NewRows("port", "name", "ips")
		for _, m := range p.Ports {
			t.Add(m.ID, m.Name, join(m.FixedIPs))
		}
		kind := "group "
		if p.AddressGroup {
			kind = fmt.Sprintf("address group (%d addresses) ", len(p.Addresses))
		}
		_ = output.Indented(w, "Peer "+p.Key+": "+kind+p.Group.String(), t)
	}
	return nil
}
