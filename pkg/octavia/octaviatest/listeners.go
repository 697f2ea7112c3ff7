package octaviatest

// createListener is POST /lbaas/listeners. Octavia's API accepts a
// default_pool (and l7policies) in the body but does not create nested
// objects here: the database layer gets the nested dict and raises, so the
// client gets a 500 and nothing is made. Only a fully populated load
// balancer create makes pools with a listener.
func (f *Fake) createListener(body Object) reply {
	req, _ := body["listener"].(Object)
	if req == nil {
		return *wsmeInvalid("listener", nil, "Mandatory field missing.")
	}
	if r := checkListener(req, true); r != nil {
		return *r
	}
	lbID := str(req, "loadbalancer_id")
	lb := f.objects[LoadBalancers][lbID]
	if lb == nil {
		return notFound("Load Balancer", lbID)
	}
	poolID := str(req, "default_pool_id")
	if poolID != "" {
		p := f.objects[Pools][poolID]
		if p == nil || p["_lb"] != lbID {
			return notFound("Pool", poolID)
		}
		if r := checkProtocols(str(req, "protocol"), str(p, "protocol")); r != nil {
			return *r
		}
	}
	if r := f.mutable(lbID); r != nil {
		return *r
	}
	if r := checkDuplicate(f.children(Listeners, "_lb", lbID), req); r != nil {
		return *r
	}
	if _, nested := req["default_pool"].(Object); nested || len(objects(req["l7policies"])) > 0 {
		return unhandled("'dict' object has no attribute '_sa_instance_state'")
	}
	if r := ovnListener(req); r != nil {
		return *r
	}
	l := f.newListener(req, lb)
	if poolID != "" {
		l["default_pool_id"] = poolID
	}
	f.insert(Listeners, l)
	f.touch(lbID)
	return reply{201, Object{"listener": f.view(Listeners, l, false)}}
}

// deleteListener is DELETE /lbaas/listeners/{id}. The listener is gone at
// once; its default pool stays, without the listener.
func (f *Fake) deleteListener(id string) reply {
	l := f.objects[Listeners][id]
	if l == nil {
		return notFound("Listener", id)
	}
	lbID := str(l, "_lb")
	if r := f.mutable(lbID); r != nil {
		return *r
	}
	delete(f.objects[Listeners], id)
	f.touch(lbID)
	return reply{204, nil}
}
