package neutrontest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/kuryr-k8s/kuryr/pkg/openstack/openstacktest"
)

// Security group rules, as Neutron serves them:
//
//	GET    /v2.0/security-group-rules       list; filters below
//	POST   /v2.0/security-group-rules       {"security_group_rule": {...}}, or
//	                                        {"security_group_rules": [...]} (one group, atomic)
//	GET    /v2.0/security-group-rules/{id}
//	DELETE /v2.0/security-group-rules/{id}  204, or 404
//
// A rule that repeats one of its group's (by Neutron's comparison: 0.0.0.0/0
// and ::/0 are no prefix, a protocol's name is its number) is refused with
// 409 SecurityGroupRuleExists; a bulk request that repeats itself with 400.

var ruleFilters = []string{"id", "security_group_id", "direction", "ethertype", "protocol", "port_range_min",
	"port_range_max", "remote_ip_prefix", "remote_group_id", "normalized_cidr",
	"project_id", "tenant_id", "description", "revision_number", "created_at", "updated_at",
	"tags", "tags-any", "not-tags", "not-tags-any"}

var ruleAttrs = []string{"security_group_id", "direction", "ethertype", "protocol", "port_range_min", "port_range_max",
	"remote_ip_prefix", "remote_group_id", "remote_address_group_id", "description", "project_id", "tenant_id"}

func (f *Fake) securityGroupRules(w http.ResponseWriter, r *http.Request, rest []string) {
	switch {
	case len(rest) == 0 && r.Method == http.MethodGet:
		q := r.URL.Query()
		if err := checkFilters(q, ruleFilters); err != nil {
			err.write(w)
			return
		}
		f.mu.Lock()
		defer f.mu.Unlock()
		f.listLocked(w, "security-group-rules", q)
	case len(rest) == 0 && r.Method == http.MethodPost:
		f.createRules(w, r)
	case len(rest) == 1 && r.Method == http.MethodGet:
		f.show(w, "security-group-rules", rest[0])
	case len(rest) == 1 && r.Method == http.MethodDelete:
		f.mu.Lock()
		defer f.mu.Unlock()
		if !f.dropRuleLocked(rest[0]) {
			notFound("security-group-rules", rest[0]).write(w)
			return
		}
		w.WriteHeader(204)
	default:
		noRoute.write(w)
	}
}

func (f *Fake) createRules(w http.ResponseWriter, r *http.Request) {
	body, err := decodeBody(r)
	if err != nil {
		err.write(w)
		return
	}
	var in []Object
	raw, bulk := body["security_group_rules"]
	if !bulk {
		raw = []byte("[" + string(body["security_group_rule"]) + "]")
	}
	if json.Unmarshal(raw, &in) != nil || len(in) == 0 || slices.IndexFunc(in, func(o Object) bool { return o == nil }) >= 0 {
		badRequest("HTTPBadRequest", "Resource body required").write(w)
		return
	}
	for _, o := range in[1:] {
		if o["security_group_id"] != in[0]["security_group_id"] {
			badRequest("SecurityGroupNotSingleGroupRules", "Only allowed to update rules for one security profile at a time").write(w)
			return
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]Object, 0, len(in))
	seen := map[string]bool{}
	for _, o := range in {
		rule, err := f.checkRule(o)
		if err != nil {
			err.write(w)
			return
		}
		if seen[ruleKey(rule)] {
			badRequest("DuplicateSecurityGroupRuleInPost", "Duplicate Security Group Rule in POST.").write(w)
			return
		}
		seen[ruleKey(rule)] = true
		out = append(out, rule)
	}
	g := f.objects["security-groups"][out[0]["security_group_id"].(string)]
	for _, have := range rulesOf(g) {
		if seen[ruleKey(have)] {
			conflict("SecurityGroupRuleExists", "Security group rule already exists. Rule id is %s.", have["id"]).write(w)
			return
		}
	}
	for _, rule := range out {
		f.addRuleLocked(g, rule)
	}
	touch(g)
	if bulk {
		openstacktest.WriteJSON(w, 201, Object{"security_group_rules": out})
		return
	}
	openstacktest.WriteJSON(w, 201, Object{"security_group_rule": out[0]})
}

// newRule is a rule of g with every field Neutron shows, fields set.
func (f *Fake) newRule(g Object, fields Object) Object {
	rule := Object{"id": f.newID("rul"), "security_group_id": g["id"], "project_id": g["project_id"],
		"tenant_id": g["project_id"], "direction": nil, "ethertype": "IPv4", "protocol": nil,
		"port_range_min": nil, "port_range_max": nil, "remote_ip_prefix": nil, "normalized_cidr": nil,
		"remote_group_id": nil, "description": "", "tags": []string{}}
	stamp(rule)
	for k, v := range fields {
		rule[k] = v
	}
	return rule
}

func (f *Fake) addRuleLocked(g, rule Object) {
	f.add("security-group-rules", rule)
	g["security_group_rules"] = append(rulesOf(g), rule)
}

// dropRuleLocked deletes a rule from its collection and its group.
func (f *Fake) dropRuleLocked(id string) bool {
	rule, ok := f.objects["security-group-rules"][id]
	if !ok {
		return false
	}
	delete(f.objects["security-group-rules"], id)
	if g, ok := f.objects["security-groups"][fmt.Sprint(rule["security_group_id"])]; ok {
		g["security_group_rules"] = slices.DeleteFunc(rulesOf(g), func(r Object) bool { return r["id"] == id })
		touch(g)
	}
	return true
}

// rulesOf reads a group's embedded rules however they were stored.
func rulesOf(g Object) []Object {
	switch rs := g["security_group_rules"].(type) {
	case []Object:
		return rs
	case []any:
		out := make([]Object, 0, len(rs))
		for _, r := range rs {
			if o, ok := r.(map[string]any); ok {
				out = append(out, o)
			}
		}
		return out
	}
	return nil
}

// ruleKey is what Neutron compares to find a duplicate rule
// (SecurityGroupDbMixin._rule_to_key).
func ruleKey(r Object) string {
	val := func(k string) string {
		v := r[k]
		switch {
		case k == "remote_ip_prefix" && (v == nil || v == "0.0.0.0/0" || v == "::/0"):
			return "+"
		case v == nil:
			return "+"
		case k == "protocol":
			name, num := protoNameNum(fmt.Sprint(v))
			return name + "/" + num
		}
		return fmt.Sprint(v)
	}
	keys := []string{"direction", "ethertype", "port_range_max", "port_range_min", "protocol",
		"remote_group_id", "remote_ip_prefix", "security_group_id"}
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = val(k)
	}
	return strings.Join(parts, "_")
}
