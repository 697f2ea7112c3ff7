package neutrontest

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"

	"github.com/kuryr-k8s/kuryr/pkg/openstack/openstacktest"
)

// Security groups, as Neutron (ML2/OVN, Zed to 2025.1) serves them:
//
//	GET    /v2.0/security-groups       list; filters below
//	POST   /v2.0/security-groups       {"security_group": {...}}: 201, with two egress rules
//	GET    /v2.0/security-groups/{id}  the group, its rules embedded
//	PUT    /v2.0/security-groups/{id}  name, description, stateful
//	DELETE /v2.0/security-groups/{id}  204; 409 while a port has it; its rules go too
//
// Tags go through the tags sub-resource (tags.go). Every group carries its
// rules as security_group_rules; the same rule objects are stored in the
// security-group-rules collection (rules.go).

var sgFilters = []string{"id", "name", "description", "project_id", "tenant_id", "stateful", "shared",
	"revision_number", "created_at", "updated_at", "tags", "tags-any", "not-tags", "not-tags-any"}

var ethertypes = []string{"IPv4", "IPv6"}

func (f *Fake) securityGroups(w http.ResponseWriter, r *http.Request, rest []string) {
	switch {
	case len(rest) == 0 && r.Method == http.MethodGet:
		q := r.URL.Query()
		if err := checkFilters(q, sgFilters); err != nil {
			err.write(w)
			return
		}
		f.mu.Lock()
		defer f.mu.Unlock()
		f.listLocked(w, "security-groups", q)
	case len(rest) == 0 && r.Method == http.MethodPost:
		f.createSecurityGroup(w, r)
	case len(rest) == 1 && r.Method == http.MethodGet:
		f.show(w, "security-groups", rest[0])
	case len(rest) == 1 && r.Method == http.MethodPut:
		f.updateSecurityGroup(w, r, rest[0])
	case len(rest) == 1 && r.Method == http.MethodDelete:
		f.deleteSecurityGroup(w, rest[0])
	default:
		noRoute.write(w)
	}
}

// readOnly are attributes Neutron shows but refuses in a POST or PUT body.
var readOnly = []string{"id", "tags", "shared", "security_group_rules", "revision_number", "created_at",
	"updated_at", "status", "normalized_cidr", "network_id"}

// checkAttrs refuses body attributes outside allowed as Neutron does: read-only
// ones are "not allowed", unknown ones "unrecognized".
func checkAttrs(o Object, allowed []string, verb string) *apiError {
	var unknown []string
	for k := range o {
		switch {
		case slices.Contains(allowed, k):
		case slices.Contains(readOnly, k):
			return badRequest("HTTPBadRequest", "Attribute '%s' not allowed in %s", k, verb)
		default:
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		slices.Sort(unknown)
		return badRequest("HTTPBadRequest", "Unrecognized attribute(s) '%s'", strings.Join(unknown, ", "))
	}
	return nil
}

// member reads {"<key>": {...}} from a request body.
func member(r *http.Request, key string) (Object, *apiError) {
	body, err := decodeBody(r)
	if err != nil {
		return nil, err
	}
	var o Object
	if json.Unmarshal(body[key], &o) != nil || o == nil {
		return nil, badRequest("HTTPBadRequest", "Resource body required")
	}
	return o, nil
}

func (f *Fake) createSecurityGroup(w http.ResponseWriter, r *http.Request) {
	in, err := member(r, "security_group")
	if err == nil {
		err = checkAttrs(in, []string{"name", "description", "project_id", "tenant_id", "stateful"}, "POST")
	}
	name, _ := in["name"].(string)
	if err == nil && strings.EqualFold(name, "default") {
		err = conflict("SecurityGroupDefaultAlreadyExists", "Default security group already exists.")
	}
	if err != nil {
		err.write(w)
		return
	}
	description, _ := in["description"].(string)
	stateful, ok := in["stateful"].(bool)
	f.mu.Lock()
	defer f.mu.Unlock()
	project := projectOf(in)
	f.defaultGroupLocked(project) // Neutron makes sure the project has one first
	g := f.newGroupLocked(project, name, description, !ok || stateful, false)
	openstacktest.WriteJSON(w, 201, Object{"security_group": g})
}

// projectOf is the project a request body names (project_id or its older
// spelling tenant_id).
func projectOf(o Object) string {
	if p, ok := o["project_id"].(string); ok && p != "" {
		return p
	}
	p, _ := o["tenant_id"].(string)
	return p
}

// newGroupLocked stores a group with the rules Neutron gives a new one: an
// egress rule per ethertype, and for a project's default group an ingress
// rule per ethertype from its own members.
func (f *Fake) newGroupLocked(project, name, description string, stateful, isDefault bool) Object {
	g := Object{"id": f.newID("sec"), "name": name, "description": description, "project_id": project,
		"tenant_id": project, "stateful": stateful, "shared": false, "tags": []string{},
		"security_group_rules": []Object{}}
	stamp(g)
	f.add("security-groups", g)
	for _, et := range ethertypes {
		if isDefault {
			f.addRuleLocked(g, f.newRule(g, Object{"direction": "ingress", "ethertype": et, "remote_group_id": g["id"]}))
		}
		f.addRuleLocked(g, f.newRule(g, Object{"direction": "egress", "ethertype": et}))
	}
	return g
}

// DefaultSecurityGroup returns the id of the project's default security
// group, which Neutron gives a port created without security groups;
// like Neutron, the fake creates it the first time it is needed.
func (f *Fake) DefaultSecurityGroup(project string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.defaultGroupLocked(project)
}

func (f *Fake) defaultGroupLocked(project string) string {
	for id, g := range f.objects["security-groups"] {
		if g["name"] == "default" && g["project_id"] == project {
			return id
		}
	}
	g := f.newGroupLocked(project, "default", "Default security group", true, true)
	return g["id"].(string)
}

func (f *Fake) updateSecurityGroup(w http.ResponseWriter, r *http.Request, id string) {
	in, err := member(r, "security_group")
	if err == nil {
		err = checkAttrs(in, []string{"name", "description", "stateful"}, "PUT")
	}
	if err != nil {
		err.write(w)
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	g, ok := f.objects["security-groups"][id]
	switch {
	case !ok:
		notFound("security-groups", id).write(w)
		return
	case g["name"] == "default" && in["name"] != nil:
		conflict("SecurityGroupCannotUpdateDefault", "Updating default security group not allowed.").write(w)
		return
	}
	for k, v := range in {
		g[k] = v
	}
	touch(g)
	openstacktest.WriteJSON(w, 200, Object{"security_group": g})
}

// deleteSecurityGroup refuses while a port has the group, then deletes it
// with its rules and the rules of other groups that admit its members
// (their remote_group_id cascades).
func (f *Fake) deleteSecurityGroup(w http.ResponseWriter, id string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, p := range f.objects["ports"] {
		if slices.Contains(stringsOf(p["security_groups"]), id) {
			conflict("SecurityGroupInUse", "Security Group %s in use.", id).write(w)
			return
		}
	}
	g, ok := f.objects["security-groups"][id]
	if !ok {
		notFound("security-groups", id).write(w)
		return
	}
	if g["name"] == "default" {
		conflict("SecurityGroupCannotRemoveDefault", "Insufficient rights for removing default security group.").write(w)
		return
	}
	for rid, rule := range f.objects["security-group-rules"] {
		if rule["security_group_id"] == id || rule["remote_group_id"] == id {
			f.dropRuleLocked(rid)
		}
	}
	delete(f.objects["security-groups"], id)
	w.WriteHeader(204)
}
