package octaviatest

import "strings"

// Request checks, in three layers as in Octavia: the WSME types (400
// before anything happens; messages approximate WSME's), the API
// controllers (400, 404, 409) and the ovn provider driver (501).

var (
	listenerProtocols = []string{"TCP", "HTTP", "HTTPS", "TERMINATED_HTTPS", "UDP", "SCTP", "PROMETHEUS"}
	poolProtocols     = []string{"HTTP", "HTTPS", "PROXY", "PROXYV2", "TCP", "UDP", "SCTP"}
	algorithms        = []string{"ROUND_ROBIN", "LEAST_CONNECTIONS", "SOURCE_IP", "SOURCE_IP_PORT"}
	ovnProtocols      = []string{"TCP", "UDP", "SCTP"}
	// poolProtocolsFor is Octavia's VALID_LISTENER_POOL_PROTOCOL_MAP.
	poolProtocolsFor = map[string][]string{
		"TCP":              {"HTTP", "HTTPS", "PROXY", "PROXYV2", "TCP"},
		"HTTP":             {"HTTP", "PROXY", "PROXYV2"},
		"HTTPS":            {"HTTPS", "PROXY", "PROXYV2", "TCP"},
		"TERMINATED_HTTPS": {"HTTP", "PROXY", "PROXYV2"},
		"UDP":              {"UDP"},
		"SCTP":             {"SCTP"},
	}
	// l4 is Octavia's L4_PROTOCOL_MAP: listeners on one port conflict when
	// their protocols share the transport.
	l4 = map[string]string{"TCP": "TCP", "HTTP": "TCP", "HTTPS": "TCP", "TERMINATED_HTTPS": "TCP",
		"PROMETHEUS": "TCP", "UDP": "UDP", "SCTP": "SCTP"}
)

func wsmeInvalid(field string, value any, why string) *reply {
	if value == nil {
		value = "None"
	}
	r := fault(400, "Invalid input for field/attribute %s. Value: '%v'. %s", field, value, why)
	return &r
}

// checkEnum checks a string field against its allowed values (any string
// when allowed is nil).
func checkEnum(o Object, field string, allowed []string, mandatory bool) *reply {
	v, ok := o[field]
	if !ok || v == nil {
		if mandatory {
			return wsmeInvalid(field, nil, "Mandatory field missing.")
		}
		return nil
	}
	if s, isStr := v.(string); !isStr || allowed != nil && !contains(allowed, s) {
		return wsmeInvalid(field, v, "Value should be one of: "+strings.Join(allowed, ", ")+".")
	}
	return nil
}

func checkPort(o Object) *reply {
	v, ok := o["protocol_port"]
	if !ok || v == nil {
		return wsmeInvalid("protocol_port", nil, "Mandatory field missing.")
	}
	if n, isInt := integer(v); !isInt || n < 1 || n > 65535 {
		return wsmeInvalid("protocol_port", v, "Value should be an integer between 1 and 65535.")
	}
	return nil
}

func first(checks ...*reply) *reply {
	for _, c := range checks {
		if c != nil {
			return c
		}
	}
	return nil
}

// checkListener checks a listener body; standalone is POST /listeners.
func checkListener(o Object, standalone bool) *reply {
	if r := first(checkEnum(o, "loadbalancer_id", nil, standalone),
		checkEnum(o, "protocol", listenerProtocols, true), checkPort(o)); r != nil {
		return r
	}
	if dp, ok := o["default_pool"].(Object); ok {
		return checkPool(dp, false)
	}
	return nil
}

// checkPool checks a pool body; standalone is POST /pools, where protocol
// and lb_algorithm are mandatory (in a fully populated create they are
// checked later, with another message).
func checkPool(o Object, standalone bool) *reply {
	if r := first(checkEnum(o, "protocol", poolProtocols, standalone),
		checkEnum(o, "lb_algorithm", algorithms, standalone)); r != nil {
		return r
	}
	for _, m := range objects(o["members"]) {
		if r := checkMember(m); r != nil {
			return r
		}
	}
	return nil
}

func checkMember(o Object) *reply {
	return first(checkEnum(o, "address", nil, true), checkPort(o))
}

// checkProtocols is the controllers' check of a listener's default pool.
func checkProtocols(listener, pool string) *reply {
	if contains(poolProtocolsFor[listener], pool) {
		return nil
	}
	r := invalid("The pool protocol '%s' is invalid while the listener protocol is '%s'.", pool, listener)
	return &r
}

// checkDuplicate refuses a listener on a port another listener of the load
// balancer uses with the same transport.
func checkDuplicate(existing []Object, o Object) *reply {
	port, _ := integer(o["protocol_port"])
	for _, e := range existing {
		if p, _ := integer(e["protocol_port"]); p == port && l4[str(e, "protocol")] == l4[str(o, "protocol")] {
			r := fault(409, "Another Listener on this Load Balancer is already using protocol %s and protocol_port %d",
				str(e, "protocol"), port)
			return &r
		}
	}
	return nil
}

// ovnListener and ovnPool are the ovn provider's refusals (501).
func ovnListener(o Object) *reply {
	if p := str(o, "protocol"); !contains(ovnProtocols, p) {
		r := unsupported("OVN provider does not support %s protocol", p)
		return &r
	}
	if cidrs, _ := o["allowed_cidrs"].([]any); len(cidrs) > 0 {
		r := unsupported("OVN provider does not support allowed_cidrs option")
		return &r
	}
	return nil
}

// persistenceTimeout is Octavia's own check on a pool's POST and PUT
// (before any provider's): a persistence timeout or granularity only on UDP
// and SCTP pools. A load balancer created in one request is not checked.
func persistenceTimeout(protocol string, o Object) *reply {
	sp, _ := o["session_persistence"].(Object)
	set := func(k string) bool { v, ok := sp[k]; return ok && v != nil && v != float64(0) && v != "" }
	if protocol == "UDP" || protocol == "SCTP" || (!set("persistence_timeout") && !set("persistence_granularity")) {
		return nil
	}
	r := fault(400, "Validation failure: %s", "persistence_timeout and persistence_granularity is only for UDP and SCTP protocol pools.")
	return &r
}

func (f *Fake) ovnPool(o Object) *reply {
	if p := str(o, "protocol"); !contains(ovnProtocols, p) {
		r := unsupported("OVN provider does not support %s protocol", p)
		return &r
	}
	if a := str(o, "lb_algorithm"); a != "SOURCE_IP_PORT" {
		r := unsupported("OVN provider does not support %s algorithm", a)
		return &r
	}
	return f.ovnPersistence(o)
}

// ovnPersistence is ovn-octavia-provider's check of a pool's session
// persistence from 5.0 (SessionPersistence); before 5.0 it takes any type
// and ignores it.
func (f *Fake) ovnPersistence(o Object) *reply {
	sp, _ := o["session_persistence"].(Object)
	if t := str(sp, "type"); f.SessionPersistence && sp != nil && t != "SOURCE_IP" {
		if f.RefusalCrashes {
			r := fault(500, "Provider 'ovn' reports error: %s", "'dict' object has no attribute 'type'")
			return &r
		}
		r := unsupported("OVN provider does not support %s session persistence. Only SOURCE_IP type is supported.", t)
		return &r
	}
	return nil
}

// ovnMemberSubnet is the ovn provider's refusal of a member without a
// subnet when the load balancer has no VIP subnet to fall back on (the
// fake does not check that the address is in that subnet).
func (f *Fake) ovnMemberSubnet(m, pool Object, action string) *reply {
	if str(m, "subnet_id") != "" || str(f.objects[LoadBalancers][str(pool, "_lb")], "vip_subnet_id") != "" {
		return nil
	}
	r := unsupported("Subnet is required, or Loadbalancer associated with Pool must have a subnet, for "+
		"Member %s with OVN Provider Driver if it is not the same as LB VIP subnet", action)
	return &r
}
