package loadbalancer

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"slices"
	"sort"
	"strings"

	"go4.org/netipx"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/log"

	kuryrv1 "github.com/kuryr-k8s/kuryr/api/v1"
	"github.com/kuryr-k8s/kuryr/pkg/controller/portgroups"
	"github.com/kuryr-k8s/kuryr/pkg/names"
	"github.com/kuryr-k8s/kuryr/pkg/neutron"
)

// securityGroups is the Neutron seam for a LoadBalancer Service's source
// group.
type securityGroups interface {
	FindSecurityGroups(ctx context.Context, tags []string) ([]neutron.SecurityGroup, error)
	SecurityGroupsNamed(ctx context.Context, name string) ([]neutron.SecurityGroup, error)
	CreateSecurityGroup(ctx context.Context, name, description, project string, tags []string) (*neutron.SecurityGroup, error)
	DeleteSecurityGroup(ctx context.Context, id string) error
	TagSecurityGroup(ctx context.Context, id string, tags []string) error
	neutron.RuleWriter
}

// The ovn provider keeps the client's address (no SNAT) and has no
// allowed_cidrs, so loadBalancerSourceRanges are enforced where the traffic
// ends: the member pods' ports. A LoadBalancer Service gets a security group
// allowing its sources (everyone when it names none) to the members' target
// ports; the pods' ports carry it while they serve the Service. The pods'
// own groups ([neutron_defaults] pod_security_groups) must not open those
// ports to the external network, or every source gets in.

// exposed says whether a Service is reached from outside the cloud through
// its VIP's floating IP: a LoadBalancer Service, or one with an external
// IP kuryr serves.
func exposed(klb *kuryrv1.KuryrLoadBalancer) bool {
	return klb.Spec.Type == string(corev1.ServiceTypeLoadBalancer) || (len(klb.Spec.ExternalIPs) > 0 && klb.Status.FloatingIP != nil)
}

// sourceRules are the ingress rules of the Service's source group: one per
// source range and member target port; none unless the Service is exposed.
// A LoadBalancer Service admits its loadBalancerSourceRanges (everyone
// when it names none), one with externalIPs everyone. Ranges that do not
// parse were reported by the Service reconciler and are skipped. The
// internal prefixes (the pods' and Services' own networks, with
// NetworkPolicies on) are cut out of the ranges: traffic from inside the
// cluster is the policies' to decide.
func sourceRules(klb *kuryrv1.KuryrLoadBalancer, internal []netip.Prefix) []neutron.Rule {
	if !exposed(klb) {
		return nil
	}
	spec := klb.Spec
	var ranges []string
	if spec.Type == string(corev1.ServiceTypeLoadBalancer) {
		ranges = spec.SourceRanges
	}
	if len(ranges) == 0 {
		ranges = []string{"0.0.0.0/0", "::/0"}
	}
	ranges = without(ranges, internal)
	seen := map[string]neutron.Rule{}
	for _, p := range spec.Ports {
		for _, m := range p.Members {
			for _, src := range ranges {
				_, n, err := net.ParseCIDR(strings.TrimSpace(src))
				if err != nil {
					continue
				}
				r := neutron.Rule{Direction: "ingress", EtherType: "IPv4", Protocol: strings.ToLower(p.Protocol),
					PortMin: int(m.Port), PortMax: int(m.Port), RemotePrefix: n.String()}
				if n.IP.To4() == nil {
					r.EtherType = "IPv6"
				}
				seen[r.Key()] = r
			}
		}
	}
	out := make([]neutron.Rule, 0, len(seen))
	for _, r := range seen {
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key() < out[j].Key() })
	return out
}

// without is ranges minus the internal prefixes, as CIDRs (ranges that do
// not parse are kept, to be skipped by the caller).
func without(ranges []string, internal []netip.Prefix) []string {
	if len(internal) == 0 {
		return ranges
	}
	var out []string
	for _, r := range ranges {
		p, err := netip.ParsePrefix(strings.TrimSpace(r))
		if err != nil {
			out = append(out, r)
			continue
		}
		var b netipx.IPSetBuilder
		b.AddPrefix(p.Masked())
		for _, in := range internal {
			b.RemovePrefix(in)
		}
		set, err := b.IPSet()
		if err != nil {
			continue
		}
		for _, q := range set.Prefixes() {
			out = append(out, q.String())
		}
	}
	return out
}

// sourceGroup makes the Service's source group match its spec (created,
// rules added and removed, or deleted when the Service is no longer
// exposed) and records it in the status.
func (r *Reconciler) sourceGroup(ctx context.Context, klb *kuryrv1.KuryrLoadBalancer, uid string) error {
	if r.Groups == nil {
		return nil
	}
	groups, err := r.findGroups(ctx, uid)
	if err != nil {
		return err
	}
	if !exposed(klb) {
		return r.dropGroups(ctx, klb, groups)
	}
	var sg neutron.SecurityGroup
	if len(groups) == 0 {
		created, err := r.Groups.CreateSecurityGroup(ctx, names.SourceGroupName(uid),
			"kuryr: external clients of Service "+klb.Namespace+"/"+klb.Name, klb.Spec.ProjectID, r.tags(uid))
		if err != nil {
			return err
		}
		sg = *created
	} else {
		// The recorded one first: the pods' ports already carry it.
		if i := slices.IndexFunc(groups, func(g neutron.SecurityGroup) bool { return g.ID == klb.Status.SecurityGroup }); i > 0 {
			groups[0], groups[i] = groups[i], groups[0]
		}
		sg = groups[0]
		if names.ServiceUIDOf(sg.Tags) == "" { // found by name: tag it for the sweep
			if err := r.Groups.TagSecurityGroup(ctx, sg.ID, r.tags(uid)); err != nil {
				return err
			}
		}
		if err := r.dropGroups(ctx, klb, groups[1:]); err != nil && !errors.Is(err, errGroupInUse) {
			return err
		}
	}
	klb.Status.SecurityGroup = sg.ID
	var internal []netip.Prefix
	if r.Settings.Internal != nil {
		if internal, err = r.Settings.Internal(ctx); err != nil {
			return err
		}
	}
	// Only ingress: Neutron's default egress rules would let every member
	// pod out, whatever its policies say.
	// Deleted one after the other, added one request each.
	added, deleted, err := neutron.SyncRules(ctx, r.Groups, &sg, sourceRules(klb, internal),
		neutron.RuleSync{Project: klb.Spec.ProjectID, Directions: []string{"ingress", "egress"}, OneByOne: true})
	if err != nil {
		return err
	}
	if added+deleted > 0 {
		log.FromContext(ctx).Info("source group", "securityGroup", sg.ID, "added", added, "deleted", deleted)
	}
	return nil
}

// findGroups returns the Service's source groups: by tag, or else by name
// (a controller killed between the create and the tagging left it
// untagged).
func (r *Reconciler) findGroups(ctx context.Context, uid string) ([]neutron.SecurityGroup, error) {
	groups, _, err := neutron.FindGroups(ctx, r.Groups, r.tags(uid)[:2], names.SourceGroupName(uid))
	return groups, err
}

// dropGroups deletes groups the Service no longer needs, once no
// KuryrPort names them (portgroups.GroupOnPorts) and Neutron agrees (409
// while a port carries one): the KuryrPort reconciler takes them off the
// pods' ports once the Service no longer needs them, and a later
// reconcile deletes them (errGroupInUse requeues without an error).
func (r *Reconciler) dropGroups(ctx context.Context, klb *kuryrv1.KuryrLoadBalancer, groups []neutron.SecurityGroup) error {
	inUse := false
	for _, g := range groups {
		if klb.Status.SecurityGroup == g.ID {
			klb.Status.SecurityGroup = ""
		}
		busy, err := portgroups.GroupOnPorts(ctx, r.Client, g.ID)
		if err != nil {
			return err
		}
		if busy {
			inUse = true
			continue
		}
		err = r.Groups.DeleteSecurityGroup(ctx, g.ID)
		switch {
		case neutron.InUse(err):
			inUse = true
		case err != nil:
			return err
		default:
			log.FromContext(ctx).Info("source group deleted", "securityGroup", g.ID)
		}
	}
	if inUse {
		return errGroupInUse
	}
	return nil
}

// errGroupInUse: a source group waits for the pods' ports to let go of it.
var errGroupInUse = errors.New("source group still on pods' ports")
