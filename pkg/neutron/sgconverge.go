package neutron

import (
	"context"

	"golang.org/x/sync/errgroup"
)

// The one way kuryr converges a security group it owns, crash-safe
// without idempotency keys: the group is the recorded one if it still
// exists, else the one its tags find (the oldest of several, the same for
// every reconciler), else the one its name finds (created, but its tagging
// went unanswered: tagged now), else a new one; then its rules are made
// the wanted ones.

// GroupFinder is the Neutron seam for finding and creating a group.
type GroupFinder interface {
	GetSecurityGroup(ctx context.Context, id string) (*SecurityGroup, error)
	FindSecurityGroups(ctx context.Context, tags []string) ([]SecurityGroup, error)
	SecurityGroupsNamed(ctx context.Context, name string) ([]SecurityGroup, error)
	CreateSecurityGroup(ctx context.Context, name, description, project string, tags []string) (*SecurityGroup, error)
	TagSecurityGroup(ctx context.Context, id string, tags []string) error
}

// RuleWriter is the Neutron seam for a group's rules.
type RuleWriter interface {
	CreateRule(ctx context.Context, sg, project string, r Rule) error
	CreateRules(ctx context.Context, sg, project string, rs []Rule) error
	DeleteRule(ctx context.Context, id string) error
}

// GroupSpec says which group EnsureGroup returns, and what it creates.
type GroupSpec struct {
	// Recorded is the id recorded last ("": none), tried first.
	Recorded string
	// Tags find the group, and tag one found by name.
	Tags []string
	// Name is the new group's name; ByName: it is looked up by it too.
	Name   string
	ByName bool
	// Description and Project are the new group's.
	Description, Project string
}

// EnsureGroup returns the group of s: the recorded one, one found by tags
// or (ByName) by name, tagged then, or a new one.
func EnsureGroup(ctx context.Context, n GroupFinder, s GroupSpec) (*SecurityGroup, error) {
	if s.Recorded != "" {
		sg, err := n.GetSecurityGroup(ctx, s.Recorded)
		if err == nil {
			return sg, nil
		}
		if !IsNotFound(err) {
			return nil, err
		}
	}
	name := ""
	if s.ByName {
		name = s.Name
	}
	found, byName, err := FindGroups(ctx, n, s.Tags, name)
	switch {
	case err != nil:
		return nil, err
	case byName:
		return &found[0], n.TagSecurityGroup(ctx, found[0].ID, s.Tags)
	case len(found) > 0:
		return Oldest(found), nil
	}
	return n.CreateSecurityGroup(ctx, s.Name, s.Description, s.Project, s.Tags)
}

// FindGroups returns the groups carrying tags or, when none does and name
// is not "", those called name (byName: created, but not tagged).
func FindGroups(ctx context.Context, n interface {
	FindSecurityGroups(ctx context.Context, tags []string) ([]SecurityGroup, error)
	SecurityGroupsNamed(ctx context.Context, name string) ([]SecurityGroup, error)
}, tags []string, name string) (found []SecurityGroup, byName bool, err error) {
	found, err = n.FindSecurityGroups(ctx, tags)
	if err != nil || len(found) > 0 || name == "" {
		return found, false, err
	}
	found, err = n.SecurityGroupsNamed(ctx, name)
	return found, len(found) > 0, err
}

// Oldest returns the oldest of groups (by creation, then id), the one
// every reconciler, and a restarted one, picks among those made by a
// create that went unanswered; nil for none.
func Oldest(groups []SecurityGroup) *SecurityGroup {
	if len(groups) == 0 {
		return nil
	}
	best := &groups[0]
	for i := range groups[1:] {
		g := &groups[i+1]
		if g.CreatedAt.Before(best.CreatedAt) || (g.CreatedAt.Equal(best.CreatedAt) && g.ID < best.ID) {
			best = g
		}
	}
	return best
}

// RuleSync says how SyncRules applies a group's rules.
type RuleSync struct {
	// Project owns the new rules.
	Project string
	// Directions are the rules' directions managed; the others (e.g.
	// Neutron's default egress rules in a group that only admits) stay.
	Directions []string
	// Deletes is how many deletes are in flight at once (<= 1: one after
	// the other, stopping at the first failure).
	Deletes int
	// OneByOne creates each rule in a request of its own, not in bulk.
	OneByOne bool
	// AddFirst adds the missing rules before deleting the others: for a
	// change that admits the same traffic through other rules (a
	// NetworkPolicy's peers moving between security and address groups).
	AddFirst bool
}

// SyncRules makes sg hold want among the managed directions: the rules it
// should not have are deleted first (a rule less denies, never opens),
// then the missing ones are added. It returns how many were added and
// deleted.
func SyncRules(ctx context.Context, n RuleWriter, sg *SecurityGroup, want []Rule, s RuleSync) (added, deleted int, err error) {
	add, del := DiffRules(want, sg.Rules, s.Directions...)
	if s.AddFirst {
		if err := createRules(ctx, n, sg.ID, add, s); err != nil {
			return 0, 0, err
		}
		return len(add), len(del), deleteRules(ctx, n, del, s.Deletes)
	}
	if err := deleteRules(ctx, n, del, s.Deletes); err != nil {
		return 0, 0, err
	}
	return len(add), len(del), createRules(ctx, n, sg.ID, add, s)
}

// createRules adds rules in bulk, or one by one.
func createRules(ctx context.Context, n RuleWriter, sg string, add []Rule, s RuleSync) error {
	if !s.OneByOne {
		return n.CreateRules(ctx, sg, s.Project, add)
	}
	for _, r := range add {
		if err := n.CreateRule(ctx, sg, s.Project, r); err != nil {
			return err
		}
	}
	return nil
}

// deleteRules deletes the rules ids, up to inFlight at a time.
func deleteRules(ctx context.Context, n RuleWriter, ids []string, inFlight int) error {
	if inFlight <= 1 {
		for _, id := range ids {
			if err := n.DeleteRule(ctx, id); err != nil {
				return err
			}
		}
		return nil
	}
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(inFlight)
	for _, id := range ids {
		g.Go(func() error { return n.DeleteRule(ctx, id) })
	}
	return g.Wait()
}
