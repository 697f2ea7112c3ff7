package neutron

import (
	"fmt"
	"time"
)

// Binding states of binding:vif_type that are not a usable VIF type.
const (
	VIFTypeUnbound       = "unbound"
	VIFTypeBindingFailed = "binding_failed"
)

// Bound reports whether Neutron has bound p to its host.
func Bound(p *Port) bool {
	return p.VIFType != "" && p.VIFType != VIFTypeUnbound && p.VIFType != VIFTypeBindingFailed
}

// CheckBinding says where Neutron stands in binding p to its host: nil
// once bound; wait while it is still binding (binding comes last in a
// create, at most bindTimeout after it); an error saying why p must be
// replaced otherwise: no agent or chassis claims the host, or it was never
// bound (its create committed while neutron-server died).
func CheckBinding(p *Port, bindTimeout time.Duration) (wait bool, err error) {
	switch {
	case Bound(p):
		return false, nil
	case p.VIFType == VIFTypeBindingFailed:
		return false, fmt.Errorf("neutron could not bind port %s to host %q "+
			"(is an OVN chassis or Neutron agent registered with that hostname?)", p.ID, p.HostID)
	case p.CreatedAt.IsZero() || time.Since(p.CreatedAt) < bindTimeout:
		return true, nil
	}
	return false, fmt.Errorf("neutron never bound port %s to host %q (created %s ago); replacing it",
		p.ID, p.HostID, time.Since(p.CreatedAt).Round(time.Second))
}

// CreateFinished reports whether Neutron is done creating p, as its listing
// tells (at now). A bulk create commits all its ports first and only then,
// one port after the other, makes each one's OVN port and binds it: a port
// listed in between has no OVN port yet, and a write to it then can leave
// it without one (ML2/OVN skips the update of a missing
// Logical_Switch_Port, and the port stays unusable until Neutron's
// maintenance task repairs it, minutes later), a delete can leave a stale
// one behind. A hypervisor's port is done once Neutron has bound it (or
// failed to); a VM's, unbound by design, and one Neutron never binds, once
// older than bindTimeout. A port without a creation time is taken as done
// (nothing tells otherwise).
func CreateFinished(p *Port, bindTimeout time.Duration, now time.Time) bool {
	if p.HostID != "" && p.VIFType != VIFTypeUnbound && p.VIFType != "" {
		return true
	}
	return p.CreatedAt.IsZero() || now.Sub(p.CreatedAt) >= bindTimeout
}
