package config

import "strings"

// LeaseIdentity is a controller's holder identity in the Lease: who it is
// (its pod) and a suffix unique to this run.
func LeaseIdentity(who, unique string) string { return who + "_" + unique }

// LeaseHolder is the "who" of a LeaseIdentity (an identity without the
// suffix is returned whole).
func LeaseHolder(identity string) string {
	if i := strings.LastIndex(identity, "_"); i > 0 {
		return identity[:i]
	}
	return identity
}
