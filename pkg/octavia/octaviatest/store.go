package octaviatest

import (
	"fmt"
	"sort"
	"strings"
	"time"
)

// Stored objects carry the API fields plus internal keys starting with "_":
// "_seq" (creation order), "_lb" (listeners and pools: their load
// balancer), "_pool" (members: their pool). Relations shown by the API
// (a load balancer's listeners and pools, a pool's listeners and members,
// "loadbalancers") are computed when an object is shown.

const (
	kindLB = iota + 1
	kindListener
	kindPool
	kindMember
	kindPort
)

// Add stores an object as if Octavia had it (ACTIVE unless
// provisioning_status is given) and returns its id. Listeners and pools
// need "loadbalancer_id", members "pool_id"; a pool's "listener_id" makes
// it that listener's default pool. Missing fields get Octavia's defaults; a
// load balancer without vip_address gets one. It panics on a missing
// parent.
func (f *Fake) Add(collection string, o Object) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	o = clone(o).(Object)
	var s Object
	switch collection {
	case LoadBalancers:
		s = f.newLB(o)
		if str(o, "vip_address") == "" {
			s["vip_address"] = f.allocateVIP()
		}
	case Listeners:
		lb := f.mustGet(LoadBalancers, str(o, "loadbalancer_id"))
		s = f.newListener(o, lb)
		if id := str(o, "default_pool_id"); id != "" {
			s["default_pool_id"] = id
		}
	case Pools:
		s = f.newPool(o, f.mustGet(LoadBalancers, str(o, "loadbalancer_id")))
		if id := str(o, "listener_id"); id != "" {
			f.mustGet(Listeners, id)["default_pool_id"] = s["id"]
		}
	case Members:
		pool := f.mustGet(Pools, str(o, "pool_id"))
		s = f.newMember(o, pool, str(pool, "project_id"))
	default:
		panic("octaviatest: unknown collection " + collection)
	}
	for _, k := range []string{"id", "provisioning_status", "operating_status", "created_at", "provider"} {
		if v, ok := o[k]; ok {
			s[k] = v
		}
	}
	if _, ok := o["provisioning_status"]; !ok {
		s["provisioning_status"] = "ACTIVE"
		s["operating_status"] = f.onlineStatus(collection, s)
	}
	if collection == LoadBalancers && isPending(s) {
		f.left[str(s, "id")] = f.ActiveAfterGets
	}
	f.insert(collection, s)
	return str(s, "id")
}

func (f *Fake) mustGet(collection, id string) Object {
	o := f.objects[collection][id]
	if o == nil {
		panic(fmt.Sprintf("octaviatest: Add: no %s %q", strings.TrimSuffix(collection, "s"), id))
	}
	return o
}

// Get returns an object as GET shows it (a copy), or nil. It does not
// count as a GET for status transitions.
func (f *Fake) Get(collection, id string) Object {
	f.mu.Lock()
	defer f.mu.Unlock()
	o := f.objects[collection][id]
	if o == nil {
		return nil
	}
	return f.view(collection, o, false)
}

// List returns a collection's objects as GET shows them, oldest first.
func (f *Fake) List(collection string) []Object {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := []Object{}
	for _, o := range f.sorted(collection) {
		out = append(out, f.view(collection, o, false))
	}
	return out
}

// Count is the number of stored objects in a collection.
func (f *Fake) Count(collection string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.objects.Count(collection)
}

// Update sets fields of a stored object, e.g. provisioning_status ERROR.
// It reports whether the object exists.
func (f *Fake) Update(collection, id string, fields Object) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	o := f.objects[collection][id]
	for k, v := range fields {
		if o != nil {
			o[k] = clone(v)
		}
	}
	return o != nil
}

// Settle turns every PENDING_* load balancer and its children ACTIVE.
func (f *Fake) Settle() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.settle()
}

// LeakedVIPs are the VIP ports left behind by failed load balancer creates
// (address -> Neutron port name "ovn-lb-vip-<load balancer id>"). Octavia
// with the ovn provider creates the VIP port before it validates the rest
// of a fully populated create and does not delete it when the create
// fails, so the address stays taken: a retry with the same vip_address
// gets a 500.
func (f *Fake) LeakedVIPs() map[string]string {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[string]string{}
	for k, v := range f.leaked {
		out[k] = v
	}
	return out
}

// ReleaseVIP forgets a leaked VIP port, as if it had been deleted in
// Neutron.
func (f *Fake) ReleaseVIP(address string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.leaked, address)
}

func (f *Fake) newID(kind int) string {
	f.seq++
	return fmt.Sprintf("%08x-0000-4000-8000-%012x", f.seq, kind)
}

func now() string { return time.Now().UTC().Format("2006-01-02T15:04:05") }

func (f *Fake) insert(collection string, o Object) {
	f.seq++
	o["_seq"] = f.seq
	f.objects.Put(collection, str(o, "id"), o)
}

func (f *Fake) sorted(collection string) []Object {
	out := make([]Object, 0, len(f.objects[collection]))
	for _, o := range f.objects[collection] {
		out = append(out, o)
	}
	sort.Slice(out, func(i, j int) bool { return out[i]["_seq"].(int) < out[j]["_seq"].(int) })
	return out
}

// children are the objects of a collection whose key is id, oldest first.
func (f *Fake) children(collection, key, id string) []Object {
	var out []Object
	for _, o := range f.sorted(collection) {
		if o[key] == id {
			out = append(out, o)
		}
	}
	return out
}

// lbOf is the load balancer an object belongs to.
func (f *Fake) lbOf(collection string, o Object) string {
	switch collection {
	case LoadBalancers:
		return str(o, "id")
	case Members:
		return str(f.objects[Pools][str(o, "_pool")], "_lb")
	}
	return str(o, "_lb")
}

func (f *Fake) vipInUse(addr string) bool {
	if _, ok := f.leaked[addr]; ok {
		return true
	}
	for _, lb := range f.objects[LoadBalancers] {
		if lb["vip_address"] == addr {
			return true
		}
	}
	return false
}

// allocateVIP picks a free address, as Neutron would on the VIP subnet.
func (f *Fake) allocateVIP() string {
	for n := 0; ; n++ {
		addr := fmt.Sprintf("10.0.%d.%d", n/240, 10+n%240)
		if !f.vipInUse(addr) {
			return addr
		}
	}
}
