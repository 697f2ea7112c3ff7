package octaviatest

import (
	"sort"
	"strings"
)

// The constructors fill what Octavia 11 shows for a new object, then the
// fields of the request (relations, ids and statuses excepted). New
// objects are PENDING_CREATE; members are NO_MONITOR (no health monitor),
// the others OFFLINE until they turn ACTIVE.

func (f *Fake) newLB(req Object) Object {
	o := Object{"name": "", "description": "", "admin_state_up": true, "project_id": "",
		"vip_address": nil, "vip_port_id": nil, "vip_subnet_id": nil, "vip_network_id": nil,
		"vip_qos_policy_id": nil, "additional_vips": []any{}, "flavor_id": nil,
		"availability_zone": nil, "tags": []any{}, "updated_at": nil}
	merge(o, req, "listeners", "pools", "provider")
	if p := str(req, "project_id"); p != "" {
		o["project_id"] = p
	}
	if str(o, "vip_port_id") == "" {
		o["vip_port_id"] = f.newID(kindPort)
	}
	return created(o, f.newID(kindLB), "ovn", "OFFLINE")
}

func (f *Fake) newListener(req, lb Object) Object {
	o := Object{"name": "", "description": "", "admin_state_up": true, "connection_limit": -1,
		"default_tls_container_ref": nil, "sni_container_refs": []any{}, "default_pool_id": nil,
		"l7policies": []any{}, "insert_headers": Object{}, "timeout_client_data": 50000,
		"timeout_member_connect": 5000, "timeout_member_data": 50000, "timeout_tcp_inspect": 0,
		"tags": []any{}, "client_ca_tls_container_ref": nil, "client_authentication": "NONE",
		"client_crl_container_ref": nil, "allowed_cidrs": nil, "tls_ciphers": nil,
		"tls_versions": nil, "alpn_protocols": nil, "updated_at": nil}
	merge(o, req, "default_pool", "default_pool_id", "loadbalancer_id", "l7policies")
	o["_lb"], o["project_id"] = lb["id"], lb["project_id"]
	return created(o, f.newID(kindListener), "", "OFFLINE")
}

func (f *Fake) newPool(req, lb Object) Object {
	o := Object{"name": "", "description": "", "admin_state_up": true, "session_persistence": nil,
		"tags": []any{}, "tls_container_ref": nil,
		"ca_tls_container_ref": nil, "crl_container_ref": nil, "tls_enabled": false,
		"tls_ciphers": nil, "tls_versions": nil, "alpn_protocols": nil, "updated_at": nil}
	merge(o, req, "members", "healthmonitor", "listener_id", "loadbalancer_id")
	o["_lb"], o["project_id"] = lb["id"], lb["project_id"]
	return created(o, f.newID(kindPool), "", "OFFLINE")
}

func (f *Fake) newMember(req, pool Object, project string) Object {
	o := Object{"name": "", "admin_state_up": true, "weight": 1, "backup": false,
		"subnet_id": nil, "monitor_address": nil, "monitor_port": nil, "tags": []any{},
		"updated_at": nil}
	merge(o, req, "pool_id")
	o["_pool"], o["project_id"] = pool["id"], project
	return created(o, f.newID(kindMember), "", "NO_MONITOR")
}

// merge copies request fields over defaults; ids, statuses, the project and
// the skipped keys are the fake's to set.
func merge(dst, src Object, skip ...string) {
	for k, v := range src {
		switch {
		case strings.HasPrefix(k, "_") || contains(skip, k) || contains(
			[]string{"id", "project_id", "provisioning_status", "operating_status", "created_at"}, k):
		case v == nil && (k == "name" || k == "description"):
			dst[k] = ""
		case v == nil && k == "tags":
			dst[k] = []any{}
		default:
			dst[k] = v
		}
	}
}

func created(o Object, id, provider, operating string) Object {
	o["id"], o["created_at"] = id, now()
	o["provisioning_status"], o["operating_status"] = "PENDING_CREATE", operating
	if provider != "" {
		o["provider"] = provider
	}
	return o
}

// view is an object as the API shows it; full is the nested form of the
// answer to a load balancer create.
func (f *Fake) view(collection string, o Object, full bool) Object {
	v := Object{}
	for k, x := range o {
		if !strings.HasPrefix(k, "_") {
			v[k] = clone(x)
		}
	}
	v["tenant_id"] = v["project_id"] // Octavia still shows the old name
	if _, ok := v["tags"]; ok {
		tags := tagsOf(v)
		sort.Strings(tags) // as they come out of the database
		v["tags"] = append([]string{}, tags...)
	}
	id := str(o, "id")
	switch collection {
	case LoadBalancers:
		v["listeners"] = f.views(Listeners, f.children(Listeners, "_lb", id), full)
		v["pools"] = f.views(Pools, f.children(Pools, "_lb", id), full)
	case Listeners:
		if !full {
			v["loadbalancers"] = []Object{{"id": o["_lb"]}}
		}
	case Pools:
		if full {
			v["healthmonitor"] = nil
		} else {
			v["loadbalancers"] = []Object{{"id": o["_lb"]}}
		}
		v["listeners"] = f.views("", f.children(Listeners, "default_pool_id", id), false)
		v["members"] = f.views(Members, f.children(Members, "_pool", id), full)
	}
	return v
}

// views shows objects, as ids only unless full.
func (f *Fake) views(collection string, objs []Object, full bool) []Object {
	out := []Object{}
	for _, o := range objs {
		if full {
			out = append(out, f.view(collection, o, true))
		} else {
			out = append(out, Object{"id": o["id"]})
		}
	}
	return out
}

func isPending(o Object) bool { return strings.HasPrefix(str(o, "provisioning_status"), "PENDING_") }

// onlineStatus is the operating status the ovn provider gives an object
// it has provisioned.
func (f *Fake) onlineStatus(collection string, o Object) string {
	id := str(o, "id")
	switch {
	case o["admin_state_up"] == false:
		return "OFFLINE"
	case collection == Members:
		return "NO_MONITOR"
	case collection == Pools && len(f.children(Listeners, "default_pool_id", id)) == 0 &&
		len(f.children(Members, "_pool", id)) == 0:
		return "OFFLINE" // a pool turns ONLINE with a listener or a member
	}
	return "ONLINE"
}

// touch marks a load balancer written: PENDING_UPDATE (a new one stays
// PENDING_CREATE) for the next ActiveAfterGets GETs.
func (f *Fake) touch(lbID string) {
	pend(f.objects[LoadBalancers][lbID])
	f.left[lbID] = f.ActiveAfterGets
}

// pend marks an object being updated.
func pend(o Object) {
	if o["provisioning_status"] != "PENDING_CREATE" {
		o["provisioning_status"] = "PENDING_UPDATE"
		o["updated_at"] = now()
	}
}

// observe counts a GET that shows a load balancer or its children.
func (f *Fake) observe(lbID string) {
	lb := f.objects[LoadBalancers][lbID]
	if lb == nil || !isPending(lb) {
		return
	}
	if f.left[lbID] <= 0 {
		f.activate(lbID)
		return
	}
	f.left[lbID]--
}

// activate is the provider reporting a load balancer and its pending
// children ACTIVE.
func (f *Fake) activate(lbID string) {
	delete(f.left, lbID)
	lb := f.objects[LoadBalancers][lbID]
	objs := map[string][]Object{LoadBalancers: {lb}, Listeners: f.children(Listeners, "_lb", lbID)}
	for _, p := range f.children(Pools, "_lb", lbID) {
		objs[Members] = append(objs[Members], f.children(Members, "_pool", str(p, "id"))...)
		objs[Pools] = append(objs[Pools], p)
	}
	for _, c := range []string{Members, Pools, Listeners, LoadBalancers} {
		for _, o := range objs[c] {
			if isPending(o) {
				o["provisioning_status"] = "ACTIVE"
				o["operating_status"] = f.onlineStatus(c, o)
			}
			if o["_crashed"] == true { // the provider reported ERROR
				o["provisioning_status"] = "ERROR"
				delete(o, "_crashed")
			}
		}
	}
	f.work(lbID)
}

func (f *Fake) settle() {
	for id, lb := range f.objects[LoadBalancers] {
		if isPending(lb) {
			f.activate(id)
		}
	}
}

// mutable answers 409 unless the load balancer is ACTIVE, as Octavia does
// for writes to children; nil when the write may go on.
func (f *Fake) mutable(lbID string) *reply {
	if f.objects[LoadBalancers][lbID]["provisioning_status"] != "ACTIVE" {
		r := immutable("Load Balancer", lbID)
		return &r
	}
	return nil
}
