package octaviatest

// createPool is POST /lbaas/pools, on a load balancer or as a listener's
// default pool. As with listeners, Octavia's API takes members (and a
// healthmonitor) in the body but its database layer raises on them: 500,
// nothing made.
func (f *Fake) createPool(body Object) reply {
	req, _ := body["pool"].(Object)
	if req == nil {
		return *wsmeInvalid("pool", nil, "Mandatory field missing.")
	}
	if r := checkPool(req, true); r != nil {
		return *r
	}
	lbID, listenerID := str(req, "loadbalancer_id"), str(req, "listener_id")
	var listener Object
	switch {
	case lbID != "":
		if f.objects[LoadBalancers][lbID] == nil {
			return notFound("Load Balancer", lbID)
		}
	case listenerID != "":
		// Octavia checks the protocols only when the pool names no load
		// balancer, and fails on an unknown listener with an exception.
		if listener = f.objects[Listeners][listenerID]; listener == nil {
			return unhandled("'NoneType' object has no attribute 'load_balancer_id'")
		}
		lbID = str(listener, "_lb")
		if r := checkProtocols(str(listener, "protocol"), str(req, "protocol")); r != nil {
			return *r
		}
	default:
		return invalid("Must provide at least one of: loadbalancer_id, listener_id")
	}
	if listenerID != "" {
		if listener = f.objects[Listeners][listenerID]; listener == nil {
			return notFound("Listener", listenerID)
		}
		if str(listener, "default_pool_id") != "" {
			return fault(409, "This listener already has a default pool")
		}
	}
	if r := f.mutable(lbID); r != nil {
		return *r
	}
	if _, hm := req["healthmonitor"].(Object); hm || len(objects(req["members"])) > 0 {
		return unhandled("'dict' object has no attribute '_sa_instance_state'")
	}
	if r := persistenceTimeout(str(req, "protocol"), req); r != nil {
		return *r
	}
	if r := f.ovnPool(req); r != nil {
		return *r
	}
	p := f.newPool(req, f.objects[LoadBalancers][lbID])
	f.insert(Pools, p)
	if listener != nil {
		listener["default_pool_id"] = p["id"]
		pend(listener)
	}
	f.touch(lbID)
	return reply{201, Object{"pool": f.view(Pools, p, false)}}
}

// updatePool is PUT /lbaas/pools/{id}: its name, admin state and session
// persistence (null removes it), checked by the provider.
func (f *Fake) updatePool(id string, body Object) reply {
	req, _ := body["pool"].(Object)
	if req == nil {
		return *wsmeInvalid("pool", nil, "Mandatory field missing.")
	}
	p := f.objects[Pools][id]
	if p == nil {
		return notFound("Pool", id)
	}
	lbID := str(p, "_lb")
	if r := f.mutable(lbID); r != nil {
		return *r
	}
	if r := persistenceTimeout(str(p, "protocol"), req); r != nil {
		return *r
	}
	if r := f.ovnPersistence(req); r != nil {
		return *r
	}
	for _, k := range []string{"name", "admin_state_up", "session_persistence"} {
		if v, ok := req[k]; ok {
			p[k] = v
		}
	}
	pend(p)
	_, admin := req["admin_state_up"]
	if _, sp := req["session_persistence"]; f.PoolUpdateCrashes && !admin && sp { // null too
		p["_crashed"] = true // ERROR once the provider is done
	}
	f.touch(lbID)
	return reply{200, Object{"pool": f.view(Pools, p, false)}}
}

// deletePool is DELETE /lbaas/pools/{id}: the pool and its members are
// gone at once, listeners lose it as their default pool.
func (f *Fake) deletePool(id string) reply {
	p := f.objects[Pools][id]
	if p == nil {
		return notFound("Pool", id)
	}
	lbID := str(p, "_lb")
	if r := f.mutable(lbID); r != nil {
		return *r
	}
	f.touch(lbID)
	if f.MemberByMember {
		f.queuePoolDelete(p)
		return reply{204, nil}
	}
	f.removePool(p)
	return reply{204, nil}
}

func (f *Fake) removePool(p Object) {
	id := str(p, "id")
	for _, m := range f.children(Members, "_pool", id) {
		delete(f.objects[Members], str(m, "id"))
	}
	for _, l := range f.children(Listeners, "default_pool_id", id) {
		l["default_pool_id"] = nil
		pend(l)
	}
	delete(f.objects[Pools], id)
}
