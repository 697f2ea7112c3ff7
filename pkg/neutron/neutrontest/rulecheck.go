package neutrontest

import (
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"
)

// protocols are the protocol names Neutron knows, with their numbers
// (neutron_lib.constants.IP_PROTOCOL_MAP).
var protocols = map[string]int{"ah": 51, "dccp": 33, "egp": 8, "esp": 50, "gre": 47, "hopopt": 0,
	"icmp": 1, "igmp": 2, "ipip": 4, "ipv6-encap": 41, "ipv6-frag": 44, "ipv6-icmp": 58, "icmpv6": 58,
	"ipv6-nonxt": 59, "ipv6-opts": 60, "ipv6-route": 43, "ospf": 89, "pgm": 113, "rsvp": 46,
	"sctp": 132, "tcp": 6, "udp": 17, "udplite": 136, "vrrp": 112}

// portProtocols have port ranges; ipv6Protocols make no sense with IPv4.
var (
	portProtocols = []int{6, 17, 33, 132, 136}
	ipv6Protocols = []int{41, 43, 44, 58, 59, 60}
)

// protoNameNum gives a protocol's name and number, either way round.
func protoNameNum(p string) (name, num string) {
	if n, ok := protocols[p]; ok {
		return p, strconv.Itoa(n)
	}
	if n, err := strconv.Atoi(p); err == nil {
		for name, m := range protocols {
			if m == n && name != "icmpv6" {
				return name, p
			}
		}
	}
	return p, p
}

// checkRule validates a rule as Neutron does before it stores one, and
// returns the rule to store (with Neutron's conversions: protocol names
// lowercased, a remote host given its /32 or /128, normalized_cidr).
func (f *Fake) checkRule(in Object) (Object, *apiError) {
	if err := checkAttrs(in, ruleAttrs, "POST"); err != nil {
		return nil, err
	}
	for _, k := range []string{"security_group_id", "direction"} {
		if s, _ := in[k].(string); s == "" {
			return nil, badRequest("HTTPBadRequest", "Failed to parse request. Required attribute '%s' not specified", k)
		}
	}
	rule := Object{"direction": in["direction"], "description": str(in["description"])}
	if d := in["direction"]; d != "ingress" && d != "egress" {
		return nil, badRequest("HTTPBadRequest", "Invalid input for direction. Reason: '%v' is not in ['ingress', 'egress'].", d)
	}
	rule["ethertype"] = "IPv4"
	if et := str(in["ethertype"]); et != "" {
		i := slices.IndexFunc(ethertypes, func(e string) bool { return strings.EqualFold(e, et) })
		if i < 0 {
			return nil, badRequest("SecurityGroupRuleInvalidEtherType",
				"Security group rule for ethertype '%s' not supported. Allowed values are ['IPv4', 'IPv6'].", et)
		}
		rule["ethertype"] = ethertypes[i]
	}
	proto, err := convertProtocol(in["protocol"], rule["ethertype"] == "IPv6")
	if err != nil {
		return nil, err
	}
	rule["protocol"] = proto
	for _, k := range []string{"port_range_min", "port_range_max"} {
		if rule[k], err = portValue(in[k]); err != nil {
			return nil, err
		}
	}
	if err := checkPortRange(proto, rule["port_range_min"], rule["port_range_max"]); err != nil {
		return nil, err
	}
	if p := str(in["remote_ip_prefix"]); p != "" {
		prefix, ok := parseCIDR(p)
		if !ok {
			return nil, badRequest("InvalidCIDR", "Invalid CIDR %s given as IP prefix.", p)
		}
		if version := map[bool]string{true: "IPv4", false: "IPv6"}[prefix.Addr().Is4()]; version != rule["ethertype"] {
			return nil, badRequest("SecurityGroupRuleParameterConflict", "Conflicting value ethertype %s for CIDR %s", rule["ethertype"], p)
		}
		rule["remote_ip_prefix"], rule["normalized_cidr"] = prefix.String(), prefix.Masked().String()
	}
	if proto != nil && rule["ethertype"] == "IPv4" {
		if _, num := protoNameNum(proto.(string)); slices.Contains(ipv6Protocols, atoi(num)) {
			return nil, badRequest("SecurityGroupEthertypeConflictWithProtocol", "Invalid ethertype IPv4 for protocol %s.", proto)
		}
	}
	if id := str(in["remote_group_id"]); id != "" {
		if str(in["remote_ip_prefix"]) != "" {
			return nil, badRequest("SecurityGroupMultipleRemoteEntites",
				"Only either one of remote_ip_prefix, remote_group_id or remote_address_group_id may be provided.")
		}
		if _, ok := f.objects["security-groups"][id]; !ok {
			return nil, notFound("security-groups", id)
		}
		rule["remote_group_id"] = id
	}
	if id := str(in["remote_address_group_id"]); id != "" {
		if str(in["remote_ip_prefix"]) != "" || str(in["remote_group_id"]) != "" {
			return nil, badRequest("SecurityGroupMultipleRemoteEntites",
				"Only either one of remote_ip_prefix, remote_group_id or remote_address_group_id may be provided.")
		}
		if _, ok := f.objects["address-groups"][id]; !ok {
			return nil, &apiError{404, "AddressGroupNotFound", fmt.Sprintf("Address group %s could not be found.", id)}
		}
		rule["remote_address_group_id"] = id
	}
	g, ok := f.objects["security-groups"][str(in["security_group_id"])]
	if !ok {
		return nil, notFound("security-groups", str(in["security_group_id"]))
	}
	out := f.newRule(g, rule)
	if p := projectOf(in); p != "" {
		out["project_id"], out["tenant_id"] = p, p
	}
	return out, nil
}

// convertProtocol is Neutron's convert_protocol: a known name (any case),
// or a number 0-255 kept as a string; "any" or none is every protocol.
// IPv6 rules get the ICMPv6 protocol for ICMP (legacy names and 1).
func convertProtocol(v any, ipv6 bool) (any, *apiError) {
	p := str(v)
	if f, ok := v.(float64); ok {
		p = strconv.FormatFloat(f, 'f', -1, 64)
	}
	if p == "" || strings.EqualFold(p, "any") {
		return nil, nil
	}
	if n, err := strconv.Atoi(p); err == nil {
		if n < 0 || n > 255 {
			return nil, invalidProtocol(p)
		}
		if ipv6 && n == 1 {
			p = "58"
		}
		return p, nil
	}
	p = strings.ToLower(p)
	if _, ok := protocols[p]; !ok {
		return nil, invalidProtocol(p)
	}
	if ipv6 && (p == "icmp" || p == "icmpv6") {
		p = "ipv6-icmp"
	}
	return p, nil
}

func invalidProtocol(p string) *apiError {
	names := make([]string, 0, len(protocols))
	for n := range protocols {
		names = append(names, n)
	}
	slices.Sort(names)
	return badRequest("SecurityGroupRuleInvalidProtocol", "Security group rule protocol %s not supported. "+
		"Only protocol values %s and integer representations [0 to 255] are supported.", p, pyList(names))
}

// portValue reads a port bound: none, or an integer 0-65535.
func portValue(v any) (any, *apiError) {
	var n int
	switch p := v.(type) {
	case nil:
		return nil, nil
	case float64:
		n = int(p)
	case string:
		var err error
		if n, err = strconv.Atoi(p); err != nil {
			return nil, badRequest("InvalidInput", "Invalid input for operation: port range must be an integer.")
		}
	default:
		return nil, badRequest("InvalidInput", "Invalid input for operation: port range must be an integer.")
	}
	if n < 0 || n > 65535 {
		return nil, badRequest("SecurityGroupInvalidPortValue", "Invalid value for port %d.", n)
	}
	return n, nil
}

// checkPortRange is SecurityGroupDbMixin._validate_port_range.
func checkPortRange(proto, lo, hi any) *apiError {
	if lo == nil && hi == nil {
		return nil
	}
	if proto == nil {
		return badRequest("SecurityGroupProtocolRequiredWithPorts", "Must also specify protocol if port range is given.")
	}
	_, num := protoNameNum(proto.(string))
	switch n := atoi(num); {
	case slices.Contains(portProtocols, n):
		if lo == 0 || hi == 0 {
			return badRequest("SecurityGroupInvalidPortValue", "Invalid value for port 0.")
		}
		if lo == nil || hi == nil || lo.(int) > hi.(int) {
			return badRequest("SecurityGroupInvalidPortRange", "For TCP/UDP protocols, port_range_min must be <= port_range_max")
		}
	case n == 1 || n == 58:
		for _, b := range []struct {
			v           any
			attr, field string
		}{{lo, "port_range_min", "type"}, {hi, "port_range_max", "code"}} {
			if b.v != nil && b.v.(int) > 255 {
				return badRequest("SecurityGroupInvalidIcmpValue",
					"Invalid value for ICMP %s (%s) %d. It must be 0 to 255.", b.field, b.attr, b.v)
			}
		}
		if lo == nil {
			return badRequest("SecurityGroupMissingIcmpType", "ICMP code (port-range-max) %d is provided but ICMP type (port-range-min) is missing.", hi)
		}
	default:
		return badRequest("SecurityGroupInvalidProtocolForPort", "Invalid protocol %s for port range, only supported for TCP, UDP, UDPLITE, SCTP and DCCP protocols.", num)
	}
	return nil
}

// parseCIDR reads an address or a CIDR as netaddr.IPNetwork does: an
// address is a host (/32 or /128); a CIDR keeps its host bits.
func parseCIDR(s string) (netip.Prefix, bool) {
	if addr, err := netip.ParseAddr(s); err == nil && addr.Zone() == "" {
		return netip.PrefixFrom(addr, addr.BitLen()), true
	}
	p, err := netip.ParsePrefix(s)
	return p, err == nil
}

func atoi(s string) int {
	n, err := strconv.Atoi(s)
	if err != nil {
		return -1
	}
	return n
}

// str reads a string field; anything else is "".
func str(v any) string {
	s, _ := v.(string)
	return s
}
