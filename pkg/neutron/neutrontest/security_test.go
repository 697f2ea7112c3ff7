package neutrontest

import (
	"fmt"
	"slices"
	"testing"
)

func TestSecurityGroupCreate(t *testing.T) {
	f := New(t)
	code, out := call(t, f, "POST", "security-groups", Object{"security_group": Object{"name": "web", "project_id": "p"}})
	if code != 201 {
		t.Fatalf("create: %d %v", code, out)
	}
	g := out["security_group"].(map[string]any)
	if g["stateful"] != true || g["tenant_id"] != "p" || g["description"] != "" || len(stringsOf(g["tags"])) != 0 {
		t.Errorf("group %v", g)
	}
	var got []string
	for _, r := range g["security_group_rules"].([]any) {
		r := r.(map[string]any)
		got = append(got, fmt.Sprint(r["direction"], " ", r["ethertype"], " ", r["protocol"], " ", r["remote_ip_prefix"], " ", r["security_group_id"] == g["id"]))
	}
	if want := []string{"egress IPv4 <nil> <nil> true", "egress IPv6 <nil> <nil> true"}; !slices.Equal(got, want) {
		t.Errorf("rules %v, want %v", got, want)
	}
	def := f.Get("security-groups", f.DefaultSecurityGroup("p"))
	if len(rulesOf(def)) != 4 || f.Count("security-groups") != 2 {
		t.Errorf("default group %v of %d groups", def, f.Count("security-groups"))
	}
	run(t, f, []step{
		{"POST", "security-groups", Object{"security_group": Object{"name": "Default"}}, 409, "SecurityGroupDefaultAlreadyExists"},
		{"POST", "security-groups", Object{"security_group": Object{"name": "x", "tags": []string{"a"}}}, 400, "HTTPBadRequest"},
		{"POST", "security-groups", Object{"security_group": Object{"name": "x", "colour": "red"}}, 400, "HTTPBadRequest"},
		{"POST", "security-groups", Object{"nothing": 1}, 400, "HTTPBadRequest"},
		{"PUT", "security-groups/" + str(g["id"]), Object{"security_group": Object{"name": "web2"}}, 200, ""},
		{"PUT", "security-groups/" + str(def["id"]), Object{"security_group": Object{"name": "x"}}, 409, "SecurityGroupCannotUpdateDefault"},
		{"GET", "security-groups/nope", nil, 404, "SecurityGroupNotFound"},
		{"DELETE", "security-groups/nope", nil, 404, "SecurityGroupNotFound"},
	})
}

func TestRules(t *testing.T) {
	f := New(t)
	sg, other := f.DefaultSecurityGroup("p"), f.DefaultSecurityGroup("q")
	rule := func(fields ...any) Object {
		r := Object{"security_group_id": sg, "direction": "ingress"}
		for i := 0; i < len(fields); i += 2 {
			r[fields[i].(string)] = fields[i+1]
		}
		return Object{"security_group_rule": r}
	}
	tcp := rule("protocol", "TCP", "port_range_min", 80, "port_range_max", 80, "remote_ip_prefix", "10.0.0.5/24")
	run(t, f, []step{
		{"POST", "security-group-rules", tcp, 201, ""},
		{"POST", "security-group-rules", rule("protocol", "6", "port_range_min", 80, "port_range_max", 80, "remote_ip_prefix", "10.0.0.5/24"), 409, "SecurityGroupRuleExists"},
		{"POST", "security-group-rules", rule("remote_ip_prefix", "0.0.0.0/0", "remote_group_id", sg), 400, "SecurityGroupMultipleRemoteEntites"},
		{"POST", "security-group-rules", rule("remote_ip_prefix", "0.0.0.0/0"), 201, ""},
		{"POST", "security-group-rules", rule(), 409, "SecurityGroupRuleExists"}, // 0.0.0.0/0 is no prefix
		{"POST", "security-group-rules", rule("ethertype", "IPv6", "protocol", "icmp"), 201, ""},
		{"POST", "security-group-rules", rule("ethertype", "IPv6", "protocol", "58"), 409, "SecurityGroupRuleExists"},
		{"POST", "security-group-rules", rule("protocol", "ipv6-icmp"), 400, "SecurityGroupEthertypeConflictWithProtocol"},
		{"POST", "security-group-rules", rule("protocol", "tcp", "port_range_min", 90, "port_range_max", 80), 400, "SecurityGroupInvalidPortRange"},
		{"POST", "security-group-rules", rule("protocol", "tcp", "port_range_min", 0, "port_range_max", 80), 400, "SecurityGroupInvalidPortValue"},
		{"POST", "security-group-rules", rule("protocol", "tcp", "port_range_max", 80), 400, "SecurityGroupInvalidPortRange"},
		{"POST", "security-group-rules", rule("protocol", "icmp", "port_range_max", 0), 400, "SecurityGroupMissingIcmpType"},
		{"POST", "security-group-rules", rule("ethertype", "IPv5"), 400, "SecurityGroupRuleInvalidEtherType"},
		{"POST", "security-group-rules", rule("direction", "sideways"), 400, "HTTPBadRequest"},
		{"POST", "security-group-rules", rule("direction", nil), 400, "HTTPBadRequest"},
		{"POST", "security-group-rules", rule("remote_ip_prefix", "10.0.0.0/33"), 400, "InvalidCIDR"},
		{"POST", "security-group-rules", rule("remote_group_id", "nope"), 404, "SecurityGroupNotFound"},
		{"POST", "security-group-rules", rule("remote_address_group_id", other), 404, "AddressGroupNotFound"}, // a security group is not an address group
		{"POST", "security-group-rules", rule("security_group_id", "nope"), 404, "SecurityGroupNotFound"},
		{"POST", "security-group-rules", rule("id", "mine"), 400, "HTTPBadRequest"},
		{"POST", "security-group-rules", Object{"security_group_rules": []Object{
			rule("protocol", "udp")["security_group_rule"].(Object), rule("protocol", "udp", "security_group_id", other)["security_group_rule"].(Object)}},
			400, "SecurityGroupNotSingleGroupRules"},
		{"POST", "security-group-rules", Object{"security_group_rules": []Object{
			rule("protocol", "udp")["security_group_rule"].(Object), rule("protocol", "17")["security_group_rule"].(Object)}},
			400, "DuplicateSecurityGroupRuleInPost"},
		{"POST", "security-group-rules", Object{"security_group_rules": []Object{
			rule("protocol", "udp")["security_group_rule"].(Object), tcp["security_group_rule"].(Object)}},
			409, "SecurityGroupRuleExists"},
		{"POST", "security-group-rules", Object{"security_group_rules": []Object{
			rule("protocol", "udp")["security_group_rule"].(Object), rule("remote_group_id", other)["security_group_rule"].(Object)}},
			201, ""},
		{"GET", "security-group-rules/nope", nil, 404, "SecurityGroupRuleNotFound"},
		{"DELETE", "security-group-rules/nope", nil, 404, "SecurityGroupRuleNotFound"},
	})
	_, out := call(t, f, "GET", "security-group-rules?security_group_id="+sg+"&protocol=tcp", nil)
	rules := out["security_group_rules"].([]any)
	if len(rules) != 1 {
		t.Fatalf("tcp rules %v", out)
	}
	r := rules[0].(map[string]any)
	if r["remote_ip_prefix"] != "10.0.0.5/24" || r["normalized_cidr"] != "10.0.0.0/24" || r["port_range_min"] != 80.0 || r["ethertype"] != "IPv4" {
		t.Errorf("stored rule %v", r)
	}
	_, out = call(t, f, "GET", "security-group-rules?security_group_id="+sg+"&ethertype=IPv6&direction=ingress", nil)
	for _, r := range out["security_group_rules"].([]any) {
		if p := r.(map[string]any)["protocol"]; p != nil && p != "ipv6-icmp" {
			t.Errorf("IPv6 ICMP stored as %v", p)
		}
	}
	if n := len(rulesOf(f.Get("security-groups", sg))); n != 4+5 {
		t.Errorf("%d rules in the group, want the default's 4 and 5 more", n)
	}
}

func TestPortUpdate(t *testing.T) {
	f := New(t)
	sg := f.DefaultSecurityGroup("p")
	port := f.Add("ports", Object{"name": "x", "security_groups": []string{sg}})
	router := f.Add("ports", Object{"name": "r", "device_owner": "network:router_interface"})
	run(t, f, []step{
		{"PUT", "ports/" + port, Object{"port": Object{"port_security_enabled": false}}, 409, "PortSecurityPortHasSecurityGroup"},
		{"PUT", "ports/" + port, Object{"port": Object{"network_id": "n2"}}, 400, "HTTPBadRequest"},
		{"PUT", "ports/" + port, Object{"port": Object{"port_security_enabled": false, "security_groups": []string{}}}, 200, ""},
		{"PUT", "ports/" + port, Object{"port": Object{"security_groups": []string{sg}}}, 400, "PortSecurityAndIPRequiredForSecurityGroups"},
		{"PUT", "ports/" + port, Object{"port": Object{"port_security_enabled": true, "security_groups": []string{sg}, "name": "y"}}, 200, ""},
		{"PUT", "ports/nope", Object{"port": Object{"name": "y"}}, 404, "PortNotFound"},
		{"DELETE", "security-groups/" + sg, nil, 409, "SecurityGroupInUse"},
	})
	if p := f.Get("ports", port); p["name"] != "y" || !slices.Equal(stringsOf(p["security_groups"]), []string{sg}) || p["revision_number"] != 2 {
		t.Errorf("port %v", p)
	}
	code, out := call(t, f, "POST", "ports", Object{"ports": []Object{{"name": "a"}, {"name": "b", "port_security_enabled": false, "security_groups": []string{sg}}}})
	if code != 400 || f.Count("ports") != 2 {
		t.Errorf("bulk create with one refusal: %d %v, %d ports", code, out, f.Count("ports"))
	}
	_, out = call(t, f, "POST", "ports", Object{"port": Object{"name": "c", "project_id": "q"}})
	if sgs := stringsOf(out["port"].(map[string]any)["security_groups"]); !slices.Equal(sgs, []string{f.DefaultSecurityGroup("q")}) {
		t.Errorf("port created without groups has %v", sgs)
	}
	if sgs := stringsOf(f.Get("ports", router)["security_groups"]); len(sgs) != 0 {
		t.Errorf("router port has groups %v", sgs)
	}
}
