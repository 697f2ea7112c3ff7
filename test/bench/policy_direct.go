package main

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/security/groups"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/security/rules"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kuryrv1 "github.com/kuryr-k8s/kuryr/api/v1"
	"github.com/kuryr-k8s/kuryr/pkg/neutron"
)

// neutronLoad prints (c): the rules Neutron holds for the run's policies,
// next to pods x policies, whether any rule names a single pod (what rules
// growing with the pods would do), and the cluster's peer groups with
// their memberships (a peer's pods' ports carry its group: O(pods x
// peers), in the ports' security_groups, not in rules).
func (b *policyBench) neutronLoad(ctx context.Context) error {
	c, err := b.count(ctx)
	if err != nil {
		return err
	}
	n := len(b.uids)
	fmt.Printf("kuryr: Neutron holds for the %d policies: %d security groups with %d rules (%.1f per policy); pods x policies = %d\n",
		n, c.groups, c.rules, float64(c.rules)/float64(n), b.sz.pods*n)
	fmt.Printf("kuryr: the cluster's peer groups: %d security groups (no rules) with %d memberships (port x peer group) among "+
		"the cluster's ports; %d address groups holding %d addresses\n", c.peerGroups, c.members, c.addressGroups, c.addresses)
	if c.groups != n {
		fmt.Printf("kuryr: only %d of the %d policies have a security group named kuryr-np-<policy UID>\n", c.groups, n)
	}
	fmt.Printf("kuryr: the shared groups kuryr-open-ingress and kuryr-open-egress hold %d rules\n", c.openRules)
	ok := c.hostRules == 0 && c.groups == n
	fmt.Printf("target: rules O(policies), not O(pods x policies): %s (%d rules name a single pod's address)\n\n", verdict(ok), c.hostRules)
	b.row("rules in the policies' security groups", fmt.Sprintf("%d (%.1f per policy; pods × policies = %d)", c.rules, float64(c.rules)/float64(n), b.sz.pods*n),
		"", "O(policies): "+verdict(ok))
	b.row("peer groups: security groups (memberships port × group); address groups (addresses)",
		fmt.Sprintf("%d (%d); %d (%d)", c.peerGroups, c.members, c.addressGroups, c.addresses), "", "")
	return nil
}

// knp reads the KuryrNetworkPolicy of a policy of the run.
func (b *policyBench) knp(ctx context.Context, ns, name string) (*kuryrv1.KuryrNetworkPolicy, error) {
	var k kuryrv1.KuryrNetworkPolicy
	if err := b.e.kuryr.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &k); err != nil {
		return nil, fmt.Errorf("KuryrNetworkPolicy %s/%s: %w", ns, name, err)
	}
	return &k, nil
}

// hostPrefix: an address as a one-host prefix, and its Neutron ethertype.
func hostPrefix(ip string) (string, rules.RuleEtherType, error) {
	a, err := netip.ParseAddr(ip)
	if err != nil {
		return "", "", err
	}
	if a.Is4() {
		return netip.PrefixFrom(a, 32).String(), rules.EtherType4, nil
	}
	return netip.PrefixFrom(a, 128).String(), rules.EtherType6, nil
}

// directRule: the yardstick of (a). A rule admitting cli-a's address on
// TCP 8080 is created directly in srv-a-deny's security group (on srv-a's
// port) and deleted again, each change timed until the probe flips: the
// last step of a policy change (rules in Neutron, rendered by OVN as
// ACLs), without kuryr. kuryr deletes the rule if it reconciles the policy
// meanwhile (a resync): it is then made again before the next sample.
func (b *policyBench) directRule(ctx context.Context, p *path) ([]sample, error) {
	k, err := b.knp(ctx, b.srvA.Namespace, "srv-a-deny")
	if err != nil {
		return nil, err
	}
	sc := b.e.OS.Network
	sg, err := groups.Get(ctx, sc, k.Status.SecurityGroupID).Extract()
	if err != nil {
		return nil, err
	}
	prefix, eth, err := hostPrefix(b.cliA.Status.PodIP)
	if err != nil {
		return nil, err
	}
	var id string
	defer func() {
		if id != "" {
			_ = rules.Delete(context.Background(), sc, id).ExtractErr()
		}
	}()
	create := func(ctx context.Context, _ int) error {
		r, err := rules.Create(ctx, sc, rules.CreateOpts{SecGroupID: sg.ID, ProjectID: sg.ProjectID, Direction: rules.DirIngress,
			EtherType: eth, Protocol: rules.ProtocolTCP, PortRangeMin: 8080, PortRangeMax: 8080, RemoteIPPrefix: prefix}).Extract()
		if err != nil {
			return err
		}
		id = r.ID
		return nil
	}
	return b.series(ctx, p, b.sz.direct, []step{
		{kind: "rule created", open: true, write: create},
		{kind: "rule deleted", write: func(ctx context.Context, _ int) error {
			err := rules.Delete(ctx, sc, id).ExtractErr()
			id = ""
			return err
		}, prepare: func(ctx context.Context) error {
			if _, err := rules.Get(ctx, sc, id).Extract(); !gophercloud.ResponseCodeIs(err, 404) {
				return err
			}
			b.undone++
			return create(ctx, 0)
		}},
	})
}

// directMembership: the yardstick of (b). The group of srv-b-clients'
// role=client peer is added directly to cli-b's port's security groups and
// removed again, each change timed until the probe flips: the one Neutron
// call a label change should cost (OVN adds the port's address to the
// port group's address set), without kuryr. The KuryrPort reconciler
// rewrites cli-b's groups when it reconciles the pod and wants other
// groups than its status records (a resync or a pod event alone does not
// do it); should it take the group off meanwhile, the group is added
// again, untimed, before the next sample.
func (b *policyBench) directMembership(ctx context.Context, p *path) ([]sample, error) {
	group, addressGroup, err := b.clientPeerGroup(ctx)
	if err != nil {
		return nil, err
	}
	if addressGroup {
		return b.directAddress(ctx, p, group)
	}
	var kp kuryrv1.KuryrPort
	if err := b.e.kuryr.Get(ctx, client.ObjectKeyFromObject(b.cliB), &kp); err != nil {
		return nil, fmt.Errorf("KuryrPort of cli-b: %w", err)
	}
	vif, ok := kp.Status.DefaultVIF()
	if !ok {
		return nil, errors.New("cli-b's KuryrPort names no port")
	}
	sc, port := b.e.OS.Network, vif.PortID
	var base []string // cli-b's groups without the peer's, read before each change
	set := func(ctx context.Context, sgs []string) error {
		_, err := ports.Update(ctx, sc, port, ports.UpdateOpts{SecurityGroups: &sgs}).Extract()
		return err
	}
	read := func(ctx context.Context) (carried bool, err error) {
		got, err := ports.Get(ctx, sc, port).Extract()
		if err != nil {
			return false, err
		}
		base = slices.DeleteFunc(slices.Clone(got.SecurityGroups), func(g string) bool { return g == group })
		return len(base) < len(got.SecurityGroups), nil
	}
	added := false
	defer func() {
		if added {
			_, _ = read(context.Background())
			_ = set(context.Background(), base)
		}
	}()
	add := func(ctx context.Context, _ int) error {
		err := set(ctx, append(slices.Clone(base), group))
		added = err == nil
		return err
	}
	return b.series(ctx, p, b.sz.direct, []step{
		{kind: "peer group added", open: true, write: add, prepare: func(ctx context.Context) error {
			_, err := read(ctx)
			return err
		}},
		{kind: "peer group removed", write: func(ctx context.Context, _ int) error {
			added = false
			return set(ctx, base)
		}, prepare: func(ctx context.Context) error {
			carried, err := read(ctx)
			if err != nil || carried {
				return err
			}
			b.undone++
			return add(ctx, 0)
		}},
	})
}

// clientPeerGroup is the group of srv-b-clients' role=client peer, as its
// KuryrNetworkPolicy records it: a security group, or an address group
// where Neutron enforces them.
func (b *policyBench) clientPeerGroup(ctx context.Context) (id string, addressGroup bool, err error) {
	k, err := b.knp(ctx, b.srvB.Namespace, "srv-b-clients")
	if err != nil {
		return "", false, err
	}
	for _, peer := range k.Spec.Peers {
		if peer.PodSelector == nil || peer.PodSelector.MatchLabels["role"] != "client" {
			continue
		}
		if id := k.Status.PeerAddressGroups[peer.Key]; id != "" {
			return id, true, nil
		}
		if id := k.Status.PeerGroups[peer.Key]; id != "" {
			return id, false, nil
		}
	}
	return "", false, errors.New("srv-b-clients' KuryrNetworkPolicy names no peer group for its role=client peer")
}

// directAddress: the yardstick of (b) where peers are address groups:
// cli-b's address is added directly to the role=client peer's address
// group and removed again, each change timed until the probe flips (the
// one Neutron call a label change costs kuryr then). The
// KuryrNetworkPolicy reconciler takes the address out again if it
// reconciles the policy meanwhile: it is then added again, untimed,
// before the next sample.
func (b *policyBench) directAddress(ctx context.Context, p *path, group string) ([]sample, error) {
	nc := neutron.New(b.e.OS.Network)
	addr, err := neutron.HostPrefix(b.cliB.Status.PodIP)
	if err != nil {
		return nil, err
	}
	added := false
	defer func() {
		if added {
			_, _ = nc.RemoveAddresses(context.Background(), group, []string{addr})
		}
	}()
	add := func(ctx context.Context, _ int) error {
		_, err := nc.AddAddresses(ctx, group, []string{addr})
		added = err == nil
		return err
	}
	return b.series(ctx, p, b.sz.direct, []step{
		{kind: "address added", open: true, write: add},
		{kind: "address removed", write: func(ctx context.Context, _ int) error {
			added = false
			_, err := nc.RemoveAddresses(ctx, group, []string{addr})
			return err
		}, prepare: func(ctx context.Context) error {
			ag, err := nc.GetAddressGroup(ctx, group)
			if err != nil || slices.Contains(ag.Addresses, addr) {
				return err
			}
			b.undone++
			return add(ctx, 0)
		}},
	})
}
