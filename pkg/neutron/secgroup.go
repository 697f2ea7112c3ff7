package neutron

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/security/groups"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/security/rules"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
	"github.com/gophercloud/gophercloud/v2/pagination"
)

// SecurityGroup is what kuryr needs of a security group.
type SecurityGroup struct {
	ID, Name  string
	Tags      []string
	Rules     []Rule
	CreatedAt time.Time
}

// Rule is one ingress or egress rule. Port range 0-0 means every port.
type Rule struct {
	ID           string
	Direction    string // ingress or egress
	EtherType    string // IPv4 or IPv6
	Protocol     string // tcp, udp, sctp, "" for any
	PortMin      int
	PortMax      int
	RemotePrefix string
	// RemoteGroup or RemoteAddressGroup: the rule admits the members of a
	// security group or an address group rather than a prefix.
	RemoteGroup        string
	RemoteAddressGroup string
}

// Key identifies a rule by what it allows, not by its id.
func (r Rule) Key() string {
	return fmt.Sprintf("%s/%s/%s/%d-%d/%s/%s/%s", r.Direction, r.EtherType, r.Protocol, r.PortMin, r.PortMax,
		r.RemotePrefix, r.RemoteGroup, r.RemoteAddressGroup)
}

// FindSecurityGroups lists the security groups carrying all of tags.
func (c *Client) FindSecurityGroups(ctx context.Context, tags []string) ([]SecurityGroup, error) {
	pages, err := groups.List(c.sc, groups.ListOpts{Tags: strings.Join(tags, ",")}).AllPages(ctx)
	if err != nil {
		return nil, fmt.Errorf("list security groups tagged %v: %w", tags, err)
	}
	return extractGroups(pages)
}

func extractGroups(pages pagination.Page) ([]SecurityGroup, error) {
	all, err := groups.ExtractGroups(pages)
	if err != nil {
		return nil, fmt.Errorf("decode security groups: %w", err)
	}
	out := make([]SecurityGroup, 0, len(all))
	for _, g := range all {
		out = append(out, groupOf(g))
	}
	return out, nil
}

func groupOf(g groups.SecGroup) SecurityGroup {
	sg := SecurityGroup{ID: g.ID, Name: g.Name, Tags: g.Tags, CreatedAt: g.CreatedAt}
	for _, r := range g.Rules {
		sg.Rules = append(sg.Rules, Rule{ID: r.ID, Direction: r.Direction, EtherType: r.EtherType, Protocol: r.Protocol,
			PortMin: r.PortRangeMin, PortMax: r.PortRangeMax, RemotePrefix: r.RemoteIPPrefix,
			RemoteGroup: r.RemoteGroupID, RemoteAddressGroup: r.RemoteAddressGroupID})
	}
	return sg
}

// GetSecurityGroup reads a security group with its rules.
func (c *Client) GetSecurityGroup(ctx context.Context, id string) (*SecurityGroup, error) {
	g, err := groups.Get(ctx, c.sc, id).Extract()
	if err != nil {
		return nil, fmt.Errorf("get security group %s: %w", id, err)
	}
	sg := groupOf(*g)
	return &sg, nil
}

// CreateSecurityGroup creates a security group (Neutron adds its two
// default egress rules) and tags it; one whose tagging failed is deleted
// again. Callers give it a name unique to its owner, so that one created
// before a crash or an unanswered request is found by name too
// (SecurityGroupsNamed).
func (c *Client) CreateSecurityGroup(ctx context.Context, name, description, project string, tags []string) (*SecurityGroup, error) {
	g, err := groups.Create(ctx, c.sc, groups.CreateOpts{Name: name, Description: description, ProjectID: project}).Extract()
	if err != nil {
		return nil, fmt.Errorf("create security group %s: %w", name, err)
	}
	sg := groupOf(*g)
	sg.Tags = tags
	if err := c.setTags(ctx, "security-groups", g.ID, tags); err != nil {
		// Untagged, it would never be found again: take it back.
		_ = c.DeleteSecurityGroup(ctx, g.ID)
		return nil, err
	}
	return &sg, nil
}

// SecurityGroupsNamed lists the security groups called name.
func (c *Client) SecurityGroupsNamed(ctx context.Context, name string) ([]SecurityGroup, error) {
	pages, err := groups.List(c.sc, groups.ListOpts{Name: name}).AllPages(ctx)
	if err != nil {
		return nil, fmt.Errorf("list security groups named %s: %w", name, err)
	}
	return extractGroups(pages)
}

// TagSecurityGroup replaces the tags of a security group.
func (c *Client) TagSecurityGroup(ctx context.Context, id string, tags []string) error {
	return c.setTags(ctx, "security-groups", id, tags)
}

// DeleteSecurityGroup deletes a security group; one already gone is not an
// error. Neutron answers 409 while a port still uses it.
func (c *Client) DeleteSecurityGroup(ctx context.Context, id string) error {
	if err := ignoreNotFound(groups.Delete(ctx, c.sc, id).ExtractErr()); err != nil {
		return fmt.Errorf("delete security group %s: %w", id, err)
	}
	return nil
}

// CreateRule adds r to the security group sg.
func (c *Client) CreateRule(ctx context.Context, sg, project string, r Rule) error {
	_, err := rules.Create(ctx, c.sc, ruleOpts(sg, project, r)).Extract()
	if err != nil && !ruleExists(err) {
		return fmt.Errorf("add rule %s to security group %s: %w", r.Key(), sg, err)
	}
	return nil
}

// CreateRules adds rules to the security group sg in one request; when
// Neutron refuses the batch because one of them exists already, they are
// added one by one.
func (c *Client) CreateRules(ctx context.Context, sg, project string, rs []Rule) error {
	if len(rs) == 0 {
		return nil
	}
	opts := make([]rules.CreateOpts, 0, len(rs))
	for _, r := range rs {
		opts = append(opts, ruleOpts(sg, project, r))
	}
	_, err := rules.CreateBulk(ctx, c.sc, opts).Extract()
	if !ruleExists(err) {
		if err != nil {
			return fmt.Errorf("add %d rules to security group %s: %w", len(rs), sg, err)
		}
		return nil
	}
	for _, r := range rs {
		if err := c.CreateRule(ctx, sg, project, r); err != nil {
			return err
		}
	}
	return nil
}

// ruleExists: Neutron refused a rule because the same one exists (409
// SecurityGroupRuleExists; a 409 for a quota is an error).
func ruleExists(err error) bool {
	return InUse(err) && strings.Contains(err.Error(), "SecurityGroupRuleExists")
}

func ruleOpts(sg, project string, r Rule) rules.CreateOpts {
	return rules.CreateOpts{SecGroupID: sg, ProjectID: project,
		Direction: rules.RuleDirection(r.Direction), EtherType: rules.RuleEtherType(r.EtherType),
		Protocol: rules.RuleProtocol(r.Protocol), PortRangeMin: r.PortMin, PortRangeMax: r.PortMax,
		RemoteIPPrefix: r.RemotePrefix, RemoteGroupID: r.RemoteGroup, RemoteAddressGroupID: r.RemoteAddressGroup}
}

// DeleteRule removes a rule; one already gone is not an error.
func (c *Client) DeleteRule(ctx context.Context, id string) error {
	if err := ignoreNotFound(rules.Delete(ctx, c.sc, id).ExtractErr()); err != nil {
		return fmt.Errorf("delete security group rule %s: %w", id, err)
	}
	return nil
}

// DiffRules returns the rules to add and the ids of the rules to delete so
// that a group holding have holds want, among the rules of the given
// directions (others, e.g. Neutron's default egress rules in a group that
// only admits, are left alone); a duplicate goes. Pure.
func DiffRules(want, have []Rule, directions ...string) (add []Rule, del []string) {
	wanted := map[string]bool{}
	for _, r := range want {
		wanted[r.Key()] = true
	}
	existing := map[string]bool{}
	for _, r := range have {
		if !slices.Contains(directions, r.Direction) {
			continue
		}
		if wanted[r.Key()] && !existing[r.Key()] {
			existing[r.Key()] = true
			continue
		}
		del = append(del, r.ID)
	}
	for _, r := range want {
		if !existing[r.Key()] {
			add = append(add, r)
		}
	}
	return add, del
}

// SetPortSecurityGroups replaces the security groups of a port, provided
// the port is still at revision (If-Match): a write Neutron does late,
// after its client gave up and a later write was done, is refused (412,
// PreconditionFailed) instead of undoing that later write.
func (c *Client) SetPortSecurityGroups(ctx context.Context, portID string, sgs []string, revision int) error {
	list := append([]string{}, sgs...)
	opts := ports.UpdateOpts{SecurityGroups: &list, RevisionNumber: &revision}
	if _, err := ports.Update(ctx, c.sc, portID, opts).Extract(); err != nil {
		return fmt.Errorf("set security groups %v on port %s at revision %d: %w", sgs, portID, revision, err)
	}
	return nil
}

// FencePort moves a port at revision past it with a change that touches
// nothing kuryr or Neutron acts on (its description, which names the
// revision): a write made at revision that Neutron has not done yet will be
// refused when it does it. Refused (412) if the port has left revision.
func (c *Client) FencePort(ctx context.Context, portID string, revision int) error {
	desc := fmt.Sprintf("kuryr: moved past revision %d, at which a write went unanswered", revision)
	opts := ports.UpdateOpts{Description: &desc, RevisionNumber: &revision}
	if _, err := ports.Update(ctx, c.sc, portID, opts).Extract(); err != nil {
		return fmt.Errorf("fence port %s at revision %d: %w", portID, revision, err)
	}
	return nil
}

// PortSecurityGroups returns the security groups a port carries and its
// revision.
func (c *Client) PortSecurityGroups(ctx context.Context, portID string) ([]string, int, error) {
	p, err := ports.Get(ctx, c.sc, portID).Extract()
	if err != nil {
		return nil, 0, fmt.Errorf("get port %s: %w", portID, err)
	}
	return p.SecurityGroups, p.RevisionNumber, nil
}
