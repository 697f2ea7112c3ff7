package neutron_test

import (
	"context"
	"slices"
	"sort"
	"testing"

	"github.com/kuryr-k8s/kuryr/pkg/names"
	"github.com/kuryr-k8s/kuryr/pkg/neutron"
	"github.com/kuryr-k8s/kuryr/pkg/neutron/neutrontest"
)

// keys are the rules' keys, sorted.
func keys(rs []neutron.Rule) []string {
	out := make([]string, 0, len(rs))
	for _, r := range rs {
		out = append(out, r.Key())
	}
	sort.Strings(out)
	return out
}

func ingress(proto string, port int, prefix string) neutron.Rule {
	return neutron.Rule{Direction: "ingress", EtherType: "IPv4", Protocol: proto, PortMin: port, PortMax: port, RemotePrefix: prefix}
}

func TestSecurityGroupCreateFindTag(t *testing.T) {
	ctx := context.Background()
	fake := neutrontest.New(t)
	c := neutron.New(fake.Client(t))
	tags := []string{names.ClusterTag("c1"), names.PolicyTag("uid-1")}
	sg, err := c.CreateSecurityGroup(ctx, "kuryr-np-uid-1", "policy", "proj", tags)
	if err != nil {
		t.Fatal(err)
	}
	egress := []string{"egress/IPv4//0-0///", "egress/IPv6//0-0///"}
	if got := keys(sg.Rules); !slices.Equal(got, egress) {
		t.Errorf("new group's rules %v, want Neutron's two egress rules %v", got, egress)
	}
	if fake.Count("security-groups") != 2 {
		t.Errorf("%d groups, want the new one and the project's default", fake.Count("security-groups"))
	}
	other, err := c.CreateSecurityGroup(ctx, "kuryr-np-uid-2", "", "proj", []string{names.ClusterTag("c1")})
	if err != nil {
		t.Fatal(err)
	}
	find := []struct {
		tags []string
		want []string
	}{
		{tags[:1], []string{sg.ID, other.ID}},
		{tags, []string{sg.ID}},
		{[]string{names.ClusterTag("c2")}, nil},
		{nil, []string{fake.DefaultSecurityGroup("proj"), sg.ID, other.ID}},
	}
	for _, tt := range find {
		found, err := c.FindSecurityGroups(ctx, tt.tags)
		if err != nil {
			t.Fatal(err)
		}
		if got := ids(found); !slices.Equal(got, sorted(tt.want)) {
			t.Errorf("FindSecurityGroups(%v) = %v, want %v", tt.tags, got, sorted(tt.want))
		}
	}
	named, err := c.SecurityGroupsNamed(ctx, "kuryr-np-uid-2")
	if err != nil || len(named) != 1 || named[0].ID != other.ID || len(named[0].Rules) != 2 {
		t.Errorf("SecurityGroupsNamed = %+v, %v", named, err)
	}
	if err := c.TagSecurityGroup(ctx, other.ID, []string{names.ClusterTag("c2")}); err != nil {
		t.Fatal(err)
	}
	if found, _ := c.FindSecurityGroups(ctx, []string{names.ClusterTag("c2")}); len(found) != 1 || found[0].ID != other.ID {
		t.Errorf("retagged group not found by its new tag: %+v", found)
	}
	if _, err := c.GetSecurityGroup(ctx, "missing"); !neutron.IsNotFound(err) {
		t.Errorf("GetSecurityGroup(missing) = %v, want 404", err)
	}
}

// newGroup creates a security group of the project "proj" tagged with
// the cluster "c1".
func newGroup(t *testing.T, c *neutron.Client, name string) *neutron.SecurityGroup {
	t.Helper()
	sg, err := c.CreateSecurityGroup(context.Background(), name, "", "proj", []string{names.ClusterTag("c1")})
	if err != nil {
		t.Fatal(err)
	}
	return sg
}

func ids(gs []neutron.SecurityGroup) []string {
	var out []string
	for _, g := range gs {
		out = append(out, g.ID)
	}
	sort.Strings(out)
	return out
}

func sorted(l []string) []string {
	out := append([]string(nil), l...)
	sort.Strings(out)
	return out
}

func TestCreateRule(t *testing.T) {
	ctx := context.Background()
	fake := neutrontest.New(t)
	c := neutron.New(fake.Client(t))
	sg := newGroup(t, c, "sg")
	peer := newGroup(t, c, "peer")
	tests := []struct {
		name string
		rule neutron.Rule
		kind neutron.Kind // "" for success
		want string       // the stored rule's key, when not the rule's own
	}{
		{"tcp port from a prefix", ingress("tcp", 80, "10.0.0.0/24"), "", ""},
		{"the same again: 409, taken as done", ingress("tcp", 80, "10.0.0.0/24"), "", ""},
		{"a host prefix is stored as /32", ingress("udp", 53, "10.0.0.5"), "", "ingress/IPv4/udp/53-53/10.0.0.5/32//"},
		{"host bits of a CIDR are kept", ingress("udp", 54, "10.0.0.5/24"), "", ""},
		{"any protocol from anywhere", neutron.Rule{Direction: "ingress", EtherType: "IPv6"}, "", ""},
		{"::/0 is no prefix: a duplicate of the previous", neutron.Rule{Direction: "ingress", EtherType: "IPv6", RemotePrefix: "::/0"}, "", "-"},
		{"remote group", neutron.Rule{Direction: "ingress", EtherType: "IPv4", RemoteGroup: peer.ID}, "", ""},
		{"remote group, tcp ports", neutron.Rule{Direction: "egress", EtherType: "IPv4", Protocol: "tcp", PortMin: 1, PortMax: 1024, RemoteGroup: peer.ID}, "", ""},
		{"missing remote group", neutron.Rule{Direction: "ingress", EtherType: "IPv4", RemoteGroup: "nope"}, neutron.KindNotFound, ""},
		{"ethertype against the prefix", ingress("tcp", 80, "fd00::/64"), neutron.KindBadRequest, ""},
		{"ports without a protocol", ingress("", 80, ""), neutron.KindBadRequest, ""},
		{"ports of icmp beyond 255", ingress("icmp", 300, ""), neutron.KindBadRequest, ""},
		{"ports of gre", ingress("gre", 80, ""), neutron.KindBadRequest, ""},
		{"a prefix and a group", neutron.Rule{Direction: "ingress", EtherType: "IPv4", RemotePrefix: "10.0.0.0/8", RemoteGroup: peer.ID}, neutron.KindBadRequest, ""},
		{"unknown protocol", ingress("bogus", 0, ""), neutron.KindBadRequest, ""},
	}
	want := []string{"egress/IPv4//0-0///", "egress/IPv6//0-0///"}
	for _, tt := range tests {
		err := c.CreateRule(ctx, sg.ID, "proj", tt.rule)
		if got := neutron.Classify(err); got != tt.kind {
			t.Errorf("%s: %v (%s), want %q", tt.name, err, got, tt.kind)
		}
		if tt.kind == "" && tt.want != "-" && !slices.Contains(want, tt.rule.Key()) {
			want = append(want, map[bool]string{true: tt.rule.Key(), false: tt.want}[tt.want == ""])
		}
	}
	got, err := c.GetSecurityGroup(ctx, sg.ID)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(keys(got.Rules), sorted(want)) {
		t.Errorf("rules\n%v, want\n%v", keys(got.Rules), sorted(want))
	}
	if err := c.CreateRule(ctx, "nope", "proj", ingress("tcp", 80, "")); !neutron.IsNotFound(err) {
		t.Errorf("rule of a missing group: %v, want 404", err)
	}
}

func TestCreateRulesBulk(t *testing.T) {
	ctx := context.Background()
	fake := neutrontest.New(t)
	c := neutron.New(fake.Client(t))
	sg := newGroup(t, c, "sg")
	a, b, d := ingress("tcp", 80, "10.0.0.0/24"), ingress("tcp", 443, "10.0.0.0/24"), ingress("udp", 53, "10.0.0.0/24")
	tests := []struct {
		name   string
		rules  []neutron.Rule
		err    neutron.Kind
		writes int // POSTs of rules
	}{
		{"new rules in one request", []neutron.Rule{a, b}, "", 1},
		{"one exists: 409, then one by one", []neutron.Rule{b, d}, "", 3},
		{"all exist", []neutron.Rule{a, b, d}, "", 4},
		{"a repeat within the request", []neutron.Rule{ingress("sctp", 9, ""), ingress("sctp", 9, "")}, neutron.KindBadRequest, 1},
		{"none", nil, "", 0},
	}
	for _, tt := range tests {
		before := fake.Requests["POST security-group-rules"]
		err := c.CreateRules(ctx, sg.ID, "proj", tt.rules)
		if neutron.Classify(err) != tt.err {
			t.Errorf("%s: %v, want %q", tt.name, err, tt.err)
		}
		if n := fake.Requests["POST security-group-rules"] - before; n != tt.writes {
			t.Errorf("%s: %d requests, want %d", tt.name, n, tt.writes)
		}
	}
	got, _ := c.GetSecurityGroup(ctx, sg.ID)
	add, del := neutron.DiffRules([]neutron.Rule{a, b, d}, got.Rules, "ingress")
	if len(add) != 0 || len(del) != 0 {
		t.Errorf("after the creates, DiffRules adds %v and deletes %v", add, del)
	}
	if fake.Count("security-group-rules") != 2+4+3 { // sg's egress, the default group's four, a b d
		t.Errorf("%d rules stored", fake.Count("security-group-rules"))
	}
}

func TestDeleteRuleAndGroup(t *testing.T) {
	ctx := context.Background()
	fake := neutrontest.New(t)
	c := neutron.New(fake.Client(t))
	sg := newGroup(t, c, "sg")
	peer := newGroup(t, c, "peer")
	if err := c.CreateRules(ctx, peer.ID, "proj", []neutron.Rule{{Direction: "ingress", EtherType: "IPv4", RemoteGroup: sg.ID}}); err != nil {
		t.Fatal(err)
	}
	port, err := c.CreatePort(ctx, neutron.PortSpec{Name: "p", NetworkID: "n", SubnetID: "s", ProjectID: "proj", SecurityGroups: []string{sg.ID}})
	if err != nil {
		t.Fatal(err)
	}
	egress := sg.Rules[0].ID
	steps := []struct {
		name string
		do   func() error
		err  func(error) bool
	}{
		{"delete a rule", func() error { return c.DeleteRule(ctx, egress) }, nil},
		{"delete it again", func() error { return c.DeleteRule(ctx, egress) }, nil},
		{"delete the group a port has", func() error { return c.DeleteSecurityGroup(ctx, sg.ID) }, neutron.InUse},
		{"take the group off the port", func() error { return c.SetPortSecurityGroups(ctx, port.ID, []string{peer.ID}, port.RevisionNumber) }, nil},
		{"delete the group", func() error { return c.DeleteSecurityGroup(ctx, sg.ID) }, nil},
		{"delete it again", func() error { return c.DeleteSecurityGroup(ctx, sg.ID) }, nil},
		{"delete the group still on the port", func() error { return c.DeleteSecurityGroup(ctx, peer.ID) }, neutron.InUse},
		{"delete the project's default", func() error { return c.DeleteSecurityGroup(ctx, fake.DefaultSecurityGroup("proj")) }, neutron.InUse},
	}
	for _, s := range steps {
		err := s.do()
		if s.err == nil && err != nil || s.err != nil && !s.err(err) {
			t.Errorf("%s: %v", s.name, err)
		}
	}
	if fake.Get("security-group-rules", sg.Rules[1].ID) != nil {
		t.Error("the deleted group's rules were kept")
	}
	got, _ := c.GetSecurityGroup(ctx, peer.ID)
	if len(got.Rules) != 2 {
		t.Errorf("the rule admitting the deleted group's members is still there: %+v", got.Rules)
	}
}

func TestPortSecurityGroups(t *testing.T) {
	ctx := context.Background()
	fake := neutrontest.New(t)
	fake.CheckSecurityGroups = true
	c := neutron.New(fake.Client(t))
	a := newGroup(t, c, "a")
	b := newGroup(t, c, "b")
	plain, err := c.CreatePort(ctx, neutron.PortSpec{Name: "plain", NetworkID: "n", SubnetID: "s", ProjectID: "proj"})
	if err != nil {
		t.Fatal(err)
	}
	open, err := c.CreatePort(ctx, neutron.PortSpec{Name: "mgmt", NetworkID: "n", SubnetID: "s", ProjectID: "proj", NoPortSecurity: true})
	if err != nil {
		t.Fatal(err)
	}
	def := fake.DefaultSecurityGroup("proj")
	tests := []struct {
		name string
		port string
		set  []string // nil: only read
		err  neutron.Kind
		want []string
	}{
		{"created without groups: the default", plain.ID, nil, "", []string{def}},
		{"created without port security: none", open.ID, nil, "", []string{}},
		{"replaced, repeats dropped", plain.ID, []string{a.ID, b.ID, a.ID}, "", []string{a.ID, b.ID}},
		{"a missing group", plain.ID, []string{a.ID, "nope"}, neutron.KindNotFound, []string{a.ID, b.ID}},
		{"taken away", plain.ID, []string{}, "", []string{}},
		{"groups on a port without port security", open.ID, []string{a.ID}, neutron.KindBadRequest, []string{}},
		{"a missing port", "nope", []string{a.ID}, neutron.KindNotFound, nil},
	}
	for _, tt := range tests {
		if tt.set != nil {
			_, rev, _ := c.PortSecurityGroups(ctx, tt.port)
			err := c.SetPortSecurityGroups(ctx, tt.port, tt.set, rev)
			if neutron.Classify(err) != tt.err {
				t.Errorf("%s: %v, want %q", tt.name, err, tt.err)
			}
		}
		if tt.want == nil {
			continue
		}
		got, _, err := c.PortSecurityGroups(ctx, tt.port)
		if err != nil || !slices.Equal(got, tt.want) {
			t.Errorf("%s: groups %v, %v; want %v", tt.name, got, err, tt.want)
		}
	}
	if _, err := c.CreatePort(ctx, neutron.PortSpec{Name: "x", NetworkID: "n", SubnetID: "s", SecurityGroups: []string{"nope"}}); !neutron.IsNotFound(err) {
		t.Errorf("port with a missing group: %v, want 404", err)
	}
}

// A write made at a revision the port has left is refused and changes
// nothing: a late write cannot undo a later one, nor one fenced.
func TestPortSecurityGroupsAtAnOldRevision(t *testing.T) {
	ctx := context.Background()
	fake := neutrontest.New(t)
	c := neutron.New(fake.Client(t))
	port, err := c.CreatePort(ctx, neutron.PortSpec{Name: "p", NetworkID: "n", SubnetID: "s", ProjectID: "proj", SecurityGroups: []string{"a"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.SetPortSecurityGroups(ctx, port.ID, []string{"b"}, port.RevisionNumber); err != nil {
		t.Fatal(err)
	}
	err = c.SetPortSecurityGroups(ctx, port.ID, []string{"a", "c"}, port.RevisionNumber)
	if !neutron.PreconditionFailed(err) {
		t.Errorf("a write at the old revision: %v, want 412", err)
	}
	if got, rev, _ := c.PortSecurityGroups(ctx, port.ID); !slices.Equal(got, []string{"b"}) || rev != port.RevisionNumber+1 {
		t.Errorf("port has %v at revision %d, want [b] at %d", got, rev, port.RevisionNumber+1)
	}
	// The same groups again change nothing, and leave the revision; a
	// fence moves the port past it.
	rev := port.RevisionNumber + 1
	if err := c.SetPortSecurityGroups(ctx, port.ID, []string{"b"}, rev); err != nil {
		t.Fatal(err)
	}
	if err := c.FencePort(ctx, port.ID, rev-1); !neutron.PreconditionFailed(err) {
		t.Errorf("a fence at an old revision: %v, want 412", err)
	}
	if err := c.FencePort(ctx, port.ID, rev); err != nil {
		t.Fatal(err)
	}
	if err := c.SetPortSecurityGroups(ctx, port.ID, []string{"c"}, rev); !neutron.PreconditionFailed(err) {
		t.Errorf("a write at the fenced revision: %v, want 412", err)
	}
}
