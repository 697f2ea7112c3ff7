package neutron

import (
	"fmt"
	"path"
	"regexp"
	"slices"
	"strings"
)

// SubnetMatch says which subnets of a floating network a Service's
// floating-subnet and floating-subnet-tags annotations choose, read as
// cloud-provider-openstack reads them:
//
//   - pattern: a subnet's whole name; a glob ("*", "?", "[...]" as
//     path.Match reads them), or "~" and a regular expression; "!" first
//     negates it.
//   - tags: tags separated by commas; a subnet with any of them, with all
//     of them when "&" comes first; with "!" first, a subnet without all
//     of them, and with "!&", without any of them (as Neutron's not-tags
//     and not-tags-any filters, which cloud-provider-openstack uses).
//
// Either may be empty (it then matches every subnet). Pure.
func SubnetMatch(pattern, tags string) (func(Subnet) bool, error) {
	byName, err := nameMatch(pattern)
	if err != nil {
		return nil, err
	}
	byTags := tagMatch(tags)
	return func(s Subnet) bool { return byName(s.Name) && byTags(s.Tags) }, nil
}

// nameMatch is SubnetMatch's pattern.
func nameMatch(pattern string) (func(string) bool, error) {
	if pattern == "" {
		return func(string) bool { return true }, nil
	}
	not := strings.HasPrefix(pattern, "!")
	pattern = strings.TrimPrefix(pattern, "!")
	var match func(string) bool
	if expr, ok := strings.CutPrefix(pattern, "~"); ok {
		if _, err := regexp.Compile(expr); err != nil {
			return nil, fmt.Errorf("floating subnet pattern %q: %w", "~"+expr, err)
		}
		// The whole name; wrapped, a pattern at the nesting limit fails.
		re, err := regexp.Compile("^(?:" + expr + ")$")
		if err != nil {
			return nil, fmt.Errorf("floating subnet pattern %q: %w", "~"+expr, err)
		}
		match = re.MatchString
	} else {
		if _, err := path.Match(pattern, ""); err != nil {
			return nil, fmt.Errorf("floating subnet pattern %q: %w", pattern, err)
		}
		match = func(name string) bool { ok, _ := path.Match(pattern, name); return ok }
	}
	return func(name string) bool { return match(name) != not }, nil
}

// tagMatch is SubnetMatch's tags.
func tagMatch(spec string) func([]string) bool {
	if spec == "" {
		return func([]string) bool { return true }
	}
	not := strings.HasPrefix(spec, "!")
	spec = strings.TrimPrefix(spec, "!")
	all := strings.HasPrefix(spec, "&")
	spec = strings.TrimPrefix(spec, "&")
	var want []string
	for _, t := range strings.Split(spec, ",") {
		if t = strings.TrimSpace(t); t != "" {
			want = append(want, t)
		}
	}
	return func(tags []string) bool {
		has := func(t string) bool { return slices.Contains(tags, t) }
		hasAll := !slices.ContainsFunc(want, func(t string) bool { return !has(t) })
		hasAny := slices.ContainsFunc(want, has)
		// cloud-provider-openstack hands these to Neutron's filters: tags
		// (all), tags-any, and with "!" not-tags (not all: what it does,
		// whatever its comments say) and, with "!&", not-tags-any (none).
		switch {
		case not && all:
			return !hasAny
		case not:
			return !hasAll
		case all:
			return hasAll
		}
		return hasAny
	}
}
