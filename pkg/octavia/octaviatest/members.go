package octaviatest

import "net/http"

// members serves /lbaas/pools/{pool}/members[/{id}].
func (f *Fake) members(method string, rt route, q map[string][]string, body Object) reply {
	pool := f.objects[Pools][rt.pool]
	if pool == nil {
		return notFound("Pool", rt.pool)
	}
	inPool := func(m Object) bool { return m != nil && m["_pool"] == rt.pool }
	switch {
	case method == http.MethodGet && rt.id == "":
		return f.list(Members, q, inPool, str(pool, "_lb"))
	case rt.id != "" && !inPool(f.objects[Members][rt.id]):
		return notFound("Member", rt.id)
	case method == http.MethodGet:
		return f.show(Members, rt.id)
	case method == http.MethodPost && rt.id == "":
		return f.createMember(pool, body)
	case method == http.MethodPut && rt.id == "":
		return f.batchMembers(pool, body, boolParam(q, "additive_only"))
	case method == http.MethodDelete && rt.id != "":
		return f.deleteMember(pool, f.objects[Members][rt.id])
	}
	return fault(405, "The method %s is not allowed here (or not modelled by the fake).", method)
}

// writable checks that a member write may go on: the pool must be ACTIVE,
// then its load balancer.
func (f *Fake) writable(pool Object) *reply {
	if pool["provisioning_status"] != "ACTIVE" {
		r := immutable("Pool", str(pool, "id"))
		return &r
	}
	return f.mutable(str(pool, "_lb"))
}

// written marks a member write: the pool, its listeners and its load
// balancer are being updated.
func (f *Fake) written(pool Object) {
	pend(pool)
	for _, l := range f.children(Listeners, "default_pool_id", str(pool, "id")) {
		pend(l)
	}
	f.touch(str(pool, "_lb"))
}

func duplicateMember(members []Object, m Object) *reply {
	port, _ := integer(m["protocol_port"])
	for _, e := range members {
		if p, _ := integer(e["protocol_port"]); p == port && e["address"] == m["address"] {
			r := fault(409, "Another member on this pool is already using ip %s on protocol_port %d",
				str(m, "address"), port)
			return &r
		}
	}
	return nil
}

func (f *Fake) createMember(pool Object, body Object) reply {
	req, _ := body["member"].(Object)
	if req == nil {
		return *wsmeInvalid("member", nil, "Mandatory field missing.")
	}
	if r := first(checkMember(req), f.writable(pool),
		duplicateMember(f.children(Members, "_pool", str(pool, "id")), req),
		f.ovnMemberSubnet(req, pool, "creation")); r != nil {
		return *r
	}
	m := f.newMember(req, pool, str(pool, "project_id"))
	f.insert(Members, m)
	f.written(pool)
	return reply{201, Object{"member": f.view(Members, m, false)}}
}

func (f *Fake) deleteMember(pool, m Object) reply {
	if r := first(f.writable(pool), f.ovnMemberSubnet(m, pool, "deletion")); r != nil {
		return *r
	}
	f.removeMember(m)
	f.written(pool)
	return reply{204, nil}
}

// batchMembers is PUT /lbaas/pools/{id}/members: the pool's members become
// the listed ones. Members are matched by address and protocol_port: a
// match keeps its id and takes the given fields (PENDING_UPDATE), the
// others are created (PENDING_CREATE) and the unlisted ones deleted (at
// once; not with additive_only). Nothing to do on an empty pool with an
// empty list: 202 and no state change.
func (f *Fake) batchMembers(pool Object, body Object, additive bool) reply {
	reqs := objects(body["members"])
	if _, ok := body["members"].([]any); !ok {
		return *wsmeInvalid("members", nil, "Mandatory field missing.")
	}
	for _, m := range reqs {
		if r := checkMember(m); r != nil {
			return *r
		}
	}
	if r := f.writable(pool); r != nil {
		return *r
	}
	old := f.children(Members, "_pool", str(pool, "id"))
	if len(old) == 0 && len(reqs) == 0 {
		return reply{202, nil}
	}
	var created, kept []Object
	updates := map[string]Object{}
	for _, req := range reqs {
		if r := first(duplicateMember(created, req), duplicateMember(kept, req),
			f.ovnMemberSubnet(req, pool, "batch update")); r != nil {
			return *r
		}
		if match := matching(old, req); match != nil {
			kept, updates[str(match, "id")] = append(kept, req), req
		} else {
			created = append(created, req)
		}
	}
	for _, m := range old {
		switch req, ok := updates[str(m, "id")]; {
		case ok:
			merge(m, req, "pool_id")
			pend(m)
		case !additive && f.MemberByMember:
			f.queueMemberDelete(m)
		case !additive:
			f.removeMember(m)
		}
	}
	for _, req := range created {
		f.insert(Members, f.newMember(req, pool, str(pool, "project_id")))
	}
	f.written(pool)
	return reply{202, nil}
}

// removeMember deletes a member, unless the provider lost it: then the
// provider's delete fails and the member stays, in ERROR.
func (f *Fake) removeMember(m Object) {
	if f.lost[str(m, "id")] {
		m["provisioning_status"] = "ERROR"
		return
	}
	delete(f.objects[Members], str(m, "id"))
}

func matching(members []Object, m Object) Object {
	for _, e := range members {
		if duplicateMember([]Object{e}, m) != nil {
			return e
		}
	}
	return nil
}
