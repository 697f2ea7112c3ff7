package octaviatest

// createLB is POST /lbaas/loadbalancers, fully populated or not. As in
// Octavia, the VIP port is made first; any failure after it leaves the port
// (and its address) behind.
func (f *Fake) createLB(body Object) reply {
	req, _ := body["loadbalancer"].(Object)
	if req == nil {
		return *wsmeInvalid("loadbalancer", nil, "Mandatory field missing.")
	}
	listeners, pools := objects(req["listeners"]), objects(req["pools"])
	for _, l := range listeners {
		if r := checkListener(l, false); r != nil {
			return *r
		}
	}
	for _, p := range pools {
		if r := checkPool(p, false); r != nil {
			return *r
		}
	}
	if str(req, "vip_subnet_id") == "" && str(req, "vip_network_id") == "" && str(req, "vip_port_id") == "" {
		return fault(400, "Validation failure: VIP must contain one of: vip_port_id, vip_network_id, vip_subnet_id.")
	}
	if p := str(req, "provider"); p != "" && p != "ovn" {
		return fault(400, "Provider '%s' is not enabled.", p)
	}
	addr := str(req, "vip_address")
	if addr != "" && f.vipInUse(addr) {
		return fault(500, "Provider 'ovn' reports error: IP address %s already allocated in subnet %s",
			addr, str(req, "vip_subnet_id"))
	}
	if addr == "" {
		addr = f.allocateVIP()
	}
	lb := f.newLB(req)
	lb["vip_address"] = addr
	g, r := f.graph(lb, listeners, pools)
	if r == nil {
		r = f.ovnChecks(g)
	}
	if r != nil {
		f.leaked[addr] = "ovn-lb-vip-" + str(lb, "id")
		return *r
	}
	f.insert(LoadBalancers, lb)
	for _, c := range []string{Pools, Members, Listeners} {
		for _, o := range g[c] {
			f.insert(c, o)
		}
	}
	f.left[str(lb, "id")] = f.ActiveAfterGets
	return reply{201, Object{"loadbalancer": f.view(LoadBalancers, lb, true)}}
}

// graph holds the children of a fully populated create, with the requests
// they were made from ("_req"), until all checks have passed.
type graph map[string][]Object

// graph is Octavia's _graph_create: the listeners' default pools join the
// top-level pools (a default pool with only a name refers to one of them),
// pools need unique names, then pools with their members are made, then
// listeners.
func (f *Fake) graph(lb Object, listeners, pools []Object) (graph, *reply) {
	g := graph{}
	specs := append([]Object{}, pools...)
	poolName := make([]string, len(listeners))
	var refs []string
	for i, l := range listeners {
		dp, _ := l["default_pool"].(Object)
		if dp == nil {
			continue
		}
		if poolName[i] = str(dp, "name"); poolName[i] == "" {
			r := invalid("Pools must be named when creating a fully populated loadbalancer.")
			return nil, &r
		}
		if fullSpec(dp) {
			specs = append(specs, dp)
		} else {
			refs = append(refs, poolName[i])
		}
	}
	ids := map[string]Object{}
	for _, p := range specs {
		if _, dup := ids[str(p, "name")]; dup {
			r := invalid("Pool names must be unique when creating a fully populated loadbalancer.")
			return nil, &r
		}
		ids[str(p, "name")] = nil
	}
	for _, name := range refs {
		if _, ok := ids[name]; !ok {
			r := invalid("Pool '%s' was referenced but no full definition was found.", name)
			return nil, &r
		}
	}
	for _, spec := range specs {
		for _, attr := range []string{"protocol", "lb_algorithm"} {
			if _, ok := spec[attr]; !ok {
				r := invalid("Pool definition for '%s' missing required attribute: %s", str(spec, "name"), attr)
				return nil, &r
			}
		}
		p := f.newPool(spec, lb)
		p["_req"], ids[str(p, "name")] = spec, p
		g[Pools] = append(g[Pools], p)
		var ms []Object
		for _, m := range objects(spec["members"]) {
			if r := duplicateMember(ms, m); r != nil {
				return nil, r
			}
			ms = append(ms, f.newMember(m, p, str(lb, "project_id")))
		}
		g[Members] = append(g[Members], ms...)
	}
	for i, req := range listeners {
		l := f.newListener(req, lb)
		l["_req"] = req
		if poolName[i] != "" {
			p := ids[poolName[i]]
			if r := checkProtocols(str(l, "protocol"), str(p, "protocol")); r != nil {
				return nil, r
			}
			l["default_pool_id"] = p["id"]
		}
		if r := checkDuplicate(g[Listeners], l); r != nil {
			return nil, r
		}
		g[Listeners] = append(g[Listeners], l)
	}
	return g, nil
}

// fullSpec tells a pool definition from a reference by name (Octavia
// counts the fields; admin_state_up and tls_enabled come by default).
func fullSpec(p Object) bool {
	for k := range p {
		if !contains([]string{"name", "admin_state_up", "tls_enabled"}, k) {
			return true
		}
	}
	return false
}

// ovnChecks is the ovn driver's loadbalancer_create: listeners, then pools.
func (f *Fake) ovnChecks(g graph) *reply {
	for _, l := range g[Listeners] {
		if r := ovnListener(l["_req"].(Object)); r != nil {
			return r
		}
		delete(l, "_req")
	}
	for _, p := range g[Pools] {
		if r := f.ovnPool(p["_req"].(Object)); r != nil {
			return r
		}
		delete(p, "_req")
	}
	return nil
}

// deleteLB is DELETE /lbaas/loadbalancers/{id}[?cascade=true]. The load
// balancer and its children are gone at once.
func (f *Fake) deleteLB(id string, q map[string][]string) reply {
	lb := f.objects[LoadBalancers][id]
	if lb == nil {
		return notFound("Load Balancer", id)
	}
	listeners, pools := f.children(Listeners, "_lb", id), f.children(Pools, "_lb", id)
	if len(listeners)+len(pools) > 0 && !boolParam(q, "cascade") {
		return invalid("Cannot delete Load Balancer %s - it has children", id)
	}
	if s := str(lb, "provisioning_status"); s != "ACTIVE" && s != "ERROR" {
		return fault(409, "Invalid state %s of loadbalancer resource %s", s, id)
	}
	if len(f.queue[id]) > 0 {
		f.BusyDeletes++ // the real provider fails it half way (see queue.go)
	}
	for _, p := range pools {
		f.removePool(p)
	}
	for _, l := range listeners {
		delete(f.objects[Listeners], str(l, "id"))
	}
	delete(f.objects[LoadBalancers], id)
	delete(f.left, id)
	delete(f.queue, id)
	return reply{204, nil}
}

// statusTree is GET /lbaas/loadbalancers/{id}/status: listeners, their
// pools (the default pool), the pools' members.
func (f *Fake) statusTree(id string) reply {
	lb := f.objects[LoadBalancers][id]
	if lb == nil {
		return notFound("Load Balancer", id)
	}
	f.observe(id)
	status := func(o Object, keys ...string) Object {
		s := Object{}
		for _, k := range append([]string{"id", "name", "operating_status", "provisioning_status"}, keys...) {
			s[k] = o[k]
		}
		return s
	}
	tree := status(lb)
	ls := []Object{}
	for _, l := range f.children(Listeners, "_lb", id) {
		ps := []Object{}
		if p := f.objects[Pools][str(l, "default_pool_id")]; p != nil {
			ms := []Object{}
			for _, m := range f.children(Members, "_pool", str(p, "id")) {
				ms = append(ms, status(m, "address", "protocol_port"))
			}
			ps = append(ps, status(p))
			ps[0]["members"] = ms
		}
		ls = append(ls, status(l))
		ls[len(ls)-1]["pools"] = ps
	}
	tree["listeners"] = ls
	return reply{200, Object{"statuses": Object{"loadbalancer": tree}}}
}
