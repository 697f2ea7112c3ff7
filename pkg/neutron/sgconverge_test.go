package neutron_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2"

	"github.com/kuryr-k8s/kuryr/pkg/neutron"
)

// groupsFake is a few groups in memory, and the calls made on them.
type groupsFake struct {
	groups []neutron.SecurityGroup
	getErr error
	calls  []string
}

func (f *groupsFake) GetSecurityGroup(_ context.Context, id string) (*neutron.SecurityGroup, error) {
	f.calls = append(f.calls, "get "+id)
	if f.getErr != nil {
		return nil, f.getErr
	}
	for i := range f.groups {
		if f.groups[i].ID == id {
			return &f.groups[i], nil
		}
	}
	return nil, gophercloud.ErrUnexpectedResponseCode{Actual: 404}
}

func (f *groupsFake) FindSecurityGroups(_ context.Context, tags []string) ([]neutron.SecurityGroup, error) {
	f.calls = append(f.calls, "find "+strings.Join(tags, ","))
	var out []neutron.SecurityGroup
	for _, g := range f.groups {
		if len(g.Tags) > 0 && !slices.ContainsFunc(tags, func(t string) bool { return !slices.Contains(g.Tags, t) }) {
			out = append(out, g)
		}
	}
	return out, nil
}

func (f *groupsFake) SecurityGroupsNamed(_ context.Context, name string) ([]neutron.SecurityGroup, error) {
	f.calls = append(f.calls, "named "+name)
	var out []neutron.SecurityGroup
	for _, g := range f.groups {
		if g.Name == name {
			out = append(out, g)
		}
	}
	return out, nil
}

func (f *groupsFake) CreateSecurityGroup(_ context.Context, name, description, project string, tags []string) (*neutron.SecurityGroup, error) {
	f.calls = append(f.calls, "create "+name+" "+description+" "+project)
	g := neutron.SecurityGroup{ID: "new", Name: name, Tags: tags}
	f.groups = append(f.groups, g)
	return &g, nil
}

func (f *groupsFake) TagSecurityGroup(_ context.Context, id string, tags []string) error {
	f.calls = append(f.calls, "tag "+id)
	return nil
}

func (f *groupsFake) CreateRule(_ context.Context, sg, _ string, r neutron.Rule) error {
	f.calls = append(f.calls, "rule "+sg+" "+r.Direction+" "+r.Protocol)
	return nil
}

func (f *groupsFake) CreateRules(_ context.Context, sg, _ string, rs []neutron.Rule) error {
	if len(rs) > 0 {
		f.calls = append(f.calls, "rules "+sg)
	}
	return nil
}

func (f *groupsFake) DeleteRule(_ context.Context, id string) error {
	f.calls = append(f.calls, "delete "+id)
	return nil
}

func TestEnsureGroup(t *testing.T) {
	now := time.Now()
	tagged := func(id string, at time.Time) neutron.SecurityGroup {
		return neutron.SecurityGroup{ID: id, Name: "g", Tags: []string{"c", "o"}, CreatedAt: at}
	}
	spec := neutron.GroupSpec{Tags: []string{"c", "o"}, Name: "g", ByName: true, Description: "d", Project: "p"}
	withRecorded := spec
	withRecorded.Recorded = "rec"
	notByName := spec
	notByName.ByName = false
	tests := []struct {
		name   string
		groups []neutron.SecurityGroup
		getErr error
		spec   neutron.GroupSpec
		want   string
		calls  []string
	}{
		{"recorded", []neutron.SecurityGroup{tagged("rec", now), tagged("old", now.Add(-time.Hour))}, nil, withRecorded,
			"rec", []string{"get rec"}},
		{"recorded gone: the oldest tagged", []neutron.SecurityGroup{tagged("b", now), tagged("a", now.Add(-time.Hour))}, nil, withRecorded,
			"a", []string{"get rec", "find c,o"}},
		{"by name, tagged then", []neutron.SecurityGroup{{ID: "untagged", Name: "g"}}, nil, spec,
			"untagged", []string{"find c,o", "named g", "tag untagged"}},
		{"not by name: created", []neutron.SecurityGroup{{ID: "untagged", Name: "g"}}, nil, notByName,
			"new", []string{"find c,o", "create g d p"}},
		{"none: created", nil, nil, spec,
			"new", []string{"find c,o", "named g", "create g d p"}},
		{"recorded unreadable", nil, errors.New("down"), withRecorded,
			"", []string{"get rec"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &groupsFake{groups: tt.groups, getErr: tt.getErr}
			sg, err := neutron.EnsureGroup(context.Background(), f, tt.spec)
			if got := ""; err == nil {
				got = sg.ID
				if got != tt.want {
					t.Errorf("group %s, want %s", got, tt.want)
				}
			} else if tt.want != "" {
				t.Errorf("error %v, want group %s", err, tt.want)
			}
			if !slices.Equal(f.calls, tt.calls) {
				t.Errorf("calls %q, want %q", f.calls, tt.calls)
			}
		})
	}
}

func TestSyncRules(t *testing.T) {
	web := neutron.Rule{Direction: "ingress", Protocol: "tcp", PortMin: 80, PortMax: 80}
	have := []neutron.Rule{
		{ID: "default-egress", Direction: "egress", EtherType: "IPv4"},
		{ID: "keep", Direction: "ingress", Protocol: "tcp", PortMin: 80, PortMax: 80},
		{ID: "dup", Direction: "ingress", Protocol: "tcp", PortMin: 80, PortMax: 80},
		{ID: "stale", Direction: "ingress", Protocol: "udp"},
	}
	sctp := neutron.Rule{Direction: "ingress", Protocol: "sctp"}
	tests := []struct {
		name   string
		want   []neutron.Rule
		sync   neutron.RuleSync
		calls  []string
		counts [2]int
	}{
		{"ingress only: default egress stays", []neutron.Rule{web, sctp}, neutron.RuleSync{Directions: []string{"ingress"}, OneByOne: true},
			[]string{"delete dup", "delete stale", "rule sg ingress sctp"}, [2]int{1, 2}},
		{"both directions, bulk", []neutron.Rule{web}, neutron.RuleSync{Directions: []string{"ingress", "egress"}},
			[]string{"delete default-egress", "delete dup", "delete stale"}, [2]int{0, 3}},
		{"none wanted, in parallel", nil, neutron.RuleSync{Directions: []string{"ingress", "egress"}, Deletes: 4},
			[]string{"delete default-egress", "delete dup", "delete keep", "delete stale"}, [2]int{0, 4}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &groupsFake{}
			added, deleted, err := neutron.SyncRules(context.Background(), &serial{f: f}, &neutron.SecurityGroup{ID: "sg", Rules: have}, tt.want, tt.sync)
			if err != nil {
				t.Fatal(err)
			}
			calls := slices.Clone(f.calls)
			slices.Sort(calls)
			want := slices.Clone(tt.calls)
			slices.Sort(want)
			if !slices.Equal(calls, want) || added != tt.counts[0] || deleted != tt.counts[1] {
				t.Errorf("calls %q (+%d -%d), want %q (+%d -%d)", f.calls, added, deleted, tt.calls, tt.counts[0], tt.counts[1])
			}
		})
	}
}

// serial makes the fake's rule calls safe from several goroutines.
type serial struct {
	mu sync.Mutex
	f  *groupsFake
}

func (s *serial) CreateRule(ctx context.Context, sg, project string, r neutron.Rule) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.f.CreateRule(ctx, sg, project, r)
}

func (s *serial) CreateRules(ctx context.Context, sg, project string, rs []neutron.Rule) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.f.CreateRules(ctx, sg, project, rs)
}

func (s *serial) DeleteRule(ctx context.Context, id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.f.DeleteRule(ctx, id)
}

// callOrder records which kind of rule call came first.
type callOrder struct{ calls []string }

func (c *callOrder) CreateRule(context.Context, string, string, neutron.Rule) error {
	c.calls = append(c.calls, "create")
	return nil
}
func (c *callOrder) CreateRules(_ context.Context, _, _ string, rs []neutron.Rule) error {
	if len(rs) > 0 {
		c.calls = append(c.calls, "create")
	}
	return nil
}
func (c *callOrder) DeleteRule(context.Context, string) error {
	c.calls = append(c.calls, "delete")
	return nil
}

// TestSyncRulesOrder: rules go before new ones are added (a rule less
// denies), except with AddFirst (the new rules admit what the old did).
func TestSyncRulesOrder(t *testing.T) {
	sg := &neutron.SecurityGroup{ID: "sg", Rules: []neutron.Rule{{ID: "old", Direction: "ingress", EtherType: "IPv4", RemoteGroup: "peer-sg"}}}
	want := []neutron.Rule{{Direction: "ingress", EtherType: "IPv4", RemoteAddressGroup: "peer-ag"}}
	for _, tc := range []struct {
		addFirst bool
		order    []string
	}{{false, []string{"delete", "create"}}, {true, []string{"create", "delete"}}} {
		var c callOrder
		if _, _, err := neutron.SyncRules(context.Background(), &c, sg, want, neutron.RuleSync{Directions: []string{"ingress"},
			AddFirst: tc.addFirst}); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(c.calls, tc.order) {
			t.Errorf("AddFirst %v: %v, want %v", tc.addFirst, c.calls, tc.order)
		}
	}
}
