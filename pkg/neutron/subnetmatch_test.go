package neutron

import (
	"strings"
	"testing"
)

// The floating-subnet and floating-subnet-tags annotations as
// cloud-provider-openstack reads them.
func TestSubnetMatch(t *testing.T) {
	blue := Subnet{Name: "public-blue", Tags: []string{"blue", "v4"}}
	red := Subnet{Name: "public-red", Tags: []string{"red"}}
	bare := Subnet{Name: "other"}
	for _, tc := range []struct {
		pattern, tags string
		want          []bool // blue, red, bare
	}{
		{"", "", []bool{true, true, true}},
		{"public-blue", "", []bool{true, false, false}},
		{"public", "", []bool{false, false, false}}, // the whole name
		{"public-*", "", []bool{true, true, false}},
		{"!public-*", "", []bool{false, false, true}},
		{"~public-(blue|red)", "", []bool{true, true, false}},
		{"~blue", "", []bool{false, false, false}}, // the whole name
		{"!~.*red", "", []bool{true, false, true}},
		{"", "blue", []bool{true, false, false}},
		{"", "blue, red", []bool{true, true, false}},   // any
		{"", "&blue,v4", []bool{true, false, false}},   // all
		{"", "&blue,red", []bool{false, false, false}}, // all
		{"", "!blue,red", []bool{true, true, true}},    // not all (no subnet has both)     // none
		{"", "!&blue,v4", []bool{false, true, true}},   // none      // not all
		{"public-*", "!blue", []bool{false, true, false}},
		{"", "!blue,v4", []bool{false, true, true}},       // not all // both
		{"public-?ed", "red", []bool{false, true, false}}, // both
		{"[^o]*", "", []bool{true, true, false}},          // a glob's class
		{"~public-blue|other", "", []bool{true, false, true}},
	} {
		match, err := SubnetMatch(tc.pattern, tc.tags)
		if err != nil {
			t.Fatalf("%q %q: %v", tc.pattern, tc.tags, err)
		}
		for i, s := range []Subnet{blue, red, bare} {
			if got := match(s); got != tc.want[i] {
				t.Errorf("pattern %q tags %q on %s %v: %v, want %v", tc.pattern, tc.tags, s.Name, s.Tags, got, tc.want[i])
			}
		}
	}
	deep := "~" + strings.Repeat("(", 999) + strings.Repeat(")", 999) // valid alone, not once anchored
	for _, bad := range []string{"~(", "[", "!~a[", "a[b", deep} {
		if _, err := SubnetMatch(bad, ""); err == nil {
			t.Errorf("pattern %q: no error", bad)
		}
	}
}
