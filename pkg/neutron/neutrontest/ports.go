package neutrontest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/kuryr-k8s/kuryr/pkg/openstack/openstacktest"
)

// Security groups of ports, as ML2 sees to them:
//
//   - a port created without security_groups gets its project's default
//     group, unless port security is off or the port is Neutron's own
//     (device_owner network:*); one created with port security off may
//     have none;
//   - PUT /v2.0/ports/{id} replaces the fields given, security_groups
//     included (deduplicated; [] or null takes them all away); turning
//     port security off needs the groups gone (409), and a port without
//     port security takes none (400);
//   - with CheckSecurityGroups, every group must exist (404).
//
// A port keeps its security group in use: deleting the group answers 409.
// A PUT with If-Match: revision_number=N is refused (412) unless the port is
// at revision N, as standard attributes do; a PUT that changes nothing
// leaves the revision as it is.

const (
	sgNeedPortSecurity = "Port security must be enabled and port must have an IP address in order to use security groups."
	sgOnPort           = "Port has security group associated. Cannot disable port security or ip address until security group is removed"
)

// trusted ports (routers', DHCP's) are Neutron's own: no security groups.
func trusted(p Object) bool { return strings.HasPrefix(str(p["device_owner"]), "network:") }

// portSecurity is a port's port_security_enabled, on unless said otherwise.
func portSecurity(p Object) bool {
	on, ok := p["port_security_enabled"].(bool)
	return on || !ok
}

// dedup keeps the first of each.
func dedup(l []string) []string {
	out := []string{}
	for _, s := range l {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

// checkPort settles the security groups of a port to be created; the
// caller holds f.mu.
func (f *Fake) checkPort(o Object) *apiError {
	psec := portSecurity(o)
	sgs := dedup(stringsOf(o["security_groups"]))
	if !psec && len(sgs) > 0 {
		return badRequest("PortSecurityAndIPRequiredForSecurityGroups", sgNeedPortSecurity)
	}
	if err := f.checkGroups(sgs); err != nil && !trusted(o) {
		return err
	}
	if o["security_groups"] == nil && psec && !trusted(o) {
		sgs = []string{f.defaultGroupLocked(projectOf(o))}
	}
	o["security_groups"], o["port_security_enabled"] = sgs, psec
	return nil
}

// checkGroups refuses groups the fake does not hold, when told to.
func (f *Fake) checkGroups(sgs []string) *apiError {
	if !f.CheckSecurityGroups {
		return nil
	}
	var missing []string
	for _, id := range sgs {
		if _, ok := f.objects["security-groups"][id]; !ok {
			missing = append(missing, id)
		}
	}
	if len(missing) > 0 {
		return notFound("security-groups", strings.Join(missing, ", "))
	}
	return nil
}

// portReadOnly are the port attributes a PUT may not change.
var portReadOnly = []string{"id", "network_id", "project_id", "tenant_id", "status", "tags",
	"created_at", "updated_at", "revision_number"}

func (f *Fake) updatePort(w http.ResponseWriter, r *http.Request, id string) {
	in, err := member(r, "port")
	if err == nil {
		for k := range in {
			if slices.Contains(portReadOnly, k) {
				err = badRequest("HTTPBadRequest", "Cannot update read-only attribute %s", k)
			}
		}
	}
	if err != nil {
		err.write(w)
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	p, ok := f.objects["ports"][id]
	if !ok {
		notFound("ports", id).write(w)
		return
	}
	rev := p["revision_number"]
	if rev == nil {
		rev = 0
	}
	if want := r.Header.Get("If-Match"); want != "" && want != fmt.Sprintf("revision_number=%v", rev) {
		(&apiError{412, "RevisionNumberConstraintFailed", fmt.Sprintf("Constrained to %s, but current revision is %v",
			want, rev)}).write(w)
		return
	}
	psec := portSecurity(p)
	if on, ok := in["port_security_enabled"].(bool); ok {
		psec = on
	}
	sgs := stringsOf(p["security_groups"])
	v, setGroups := in["security_groups"]
	if setGroups {
		sgs = dedup(stringsOf(v))
	}
	switch {
	case !psec && setGroups && len(sgs) > 0:
		err = badRequest("PortSecurityAndIPRequiredForSecurityGroups", sgNeedPortSecurity)
	case !psec && len(sgs) > 0:
		err = conflict("PortSecurityPortHasSecurityGroup", sgOnPort)
	case setGroups && !trusted(p):
		err = f.checkGroups(sgs)
	}
	if err != nil {
		err.write(w)
		return
	}
	changed := psec != portSecurity(p) || !sameSet(sgs, stringsOf(p["security_groups"]))
	host, rebind := in["binding:host_id"]
	rebind = rebind && !sameJSON(p["binding:host_id"], host)
	for k, v := range in {
		if k != "security_groups" && !sameJSON(p[k], v) {
			changed = true
		}
		p[k] = v
	}
	p["security_groups"], p["port_security_enabled"] = append([]string{}, sgs...), psec
	if rebind {
		// A new host is a new binding: unbound without one, DOWN until the
		// host's OVN claims the port.
		p["status"], p["binding:vif_type"] = "DOWN", "ovs"
		if str(host) == "" {
			p["binding:vif_type"] = "unbound"
		}
	}
	if changed {
		touch(p) // as Neutron, which bumps only what the update modified
	}
	openstacktest.WriteJSON(w, 200, Object{"port": p})
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(slices.Compact(a), slices.Compact(b))
}

// sameJSON compares a stored value with a decoded one by their JSON.
func sameJSON(a, b any) bool {
	ja, errA := json.Marshal(a)
	jb, errB := json.Marshal(b)
	return errA == nil && errB == nil && string(ja) == string(jb)
}
