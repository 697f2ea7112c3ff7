package openstack

import "slices"

// WithTags is have with the tags of add it lacks, in order, and whether
// any was missing: what a tag-adding write sends (Neutron and Octavia
// replace an object's tags as a whole). Pure.
func WithTags(have, add []string) ([]string, bool) {
	want := slices.Clone(have)
	for _, t := range add {
		if !slices.Contains(want, t) {
			want = append(want, t)
		}
	}
	return want, len(want) > len(have)
}
