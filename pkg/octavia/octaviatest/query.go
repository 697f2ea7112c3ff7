package octaviatest

import (
	"fmt"
	"strings"
)

var (
	resourceNames = map[string]string{LoadBalancers: "Load Balancer", Listeners: "Listener", Pools: "Pool", Members: "Member"}
	singular      = map[string]string{LoadBalancers: "loadbalancer", Listeners: "listener", Pools: "pool", Members: "member"}
	// auxiliary are query parameters that do not filter; the fake answers
	// everything on one page, unsorted (oldest first).
	auxiliary  = []string{"limit", "marker", "sort_key", "sort_dir", "page_reverse", "fields"}
	tagFilters = []string{"tags", "tags-any", "not-tags", "not-tags-any"}
)

// show is GET of one object; it counts as a GET of its load balancer.
func (f *Fake) show(collection, id string) reply {
	o := f.objects[collection][id]
	if o == nil {
		return notFound(resourceNames[collection], id)
	}
	if collection == LoadBalancers && !isPending(o) {
		f.work(id) // the provider goes on with its queue
	}
	f.observe(f.lbOf(collection, o))
	return reply{200, Object{singular[collection]: f.view(collection, o, false)}}
}

// list is GET of a collection (of the objects in scope, if given) with
// Octavia's filters: tags (all of them), tags-any, not-tags, not-tags-any
// (comma-separated or repeated), loadbalancer_id for listeners and pools,
// and any field shown, by exact value. An unknown filter is a 400. It
// counts as a GET of every load balancer concerned (and of lb).
func (f *Fake) list(collection string, q map[string][]string, scope func(Object) bool, lb string) reply {
	for k := range q {
		if !contains(auxiliary, k) && !contains(tagFilters, k) && !filterable(collection, k) {
			return fault(400, "One or more arguments are either duplicate or invalid")
		}
	}
	var objs []Object
	seen := map[string]bool{}
	if lb != "" {
		seen[lb] = true
		f.observe(lb)
	}
	for _, o := range f.sorted(collection) {
		if scope != nil && !scope(o) {
			continue
		}
		objs = append(objs, o)
		if id := f.lbOf(collection, o); !seen[id] {
			seen[id] = true
			f.observe(id)
		}
	}
	out := []Object{}
	for _, o := range objs {
		if v := f.view(collection, o, false); matches(v, o, q) {
			out = append(out, v)
		}
	}
	return reply{200, Object{collection: out, collection + "_links": []any{}}}
}

// filterable tells the fields a collection can be filtered on: what it
// shows, plus loadbalancer_id for listeners and pools.
func filterable(collection, k string) bool {
	if k == "loadbalancer_id" && (collection == Listeners || collection == Pools) {
		return true
	}
	var probe Object
	f := &Fake{objects: map[string]map[string]Object{}}
	switch collection {
	case LoadBalancers:
		probe = f.newLB(Object{})
	case Listeners:
		probe = f.newListener(Object{}, Object{})
	case Pools:
		probe = f.newPool(Object{}, Object{})
	case Members:
		probe = f.newMember(Object{}, Object{}, "")
	}
	_, ok := probe[k]
	if !ok {
		ok = contains([]string{"listeners", "pools", "loadbalancers", "members",
			"vip_address", "protocol", "protocol_port", "lb_algorithm", "address"}, k)
	}
	return ok
}

func matches(v, stored Object, q map[string][]string) bool {
	for k, vals := range q {
		var want []string
		for _, s := range vals {
			for _, t := range strings.Split(s, ",") {
				if t != "" {
					want = append(want, t)
				}
			}
		}
		have := map[string]bool{}
		for _, t := range tagsOf(v) {
			have[t] = true
		}
		someTag := false
		for _, t := range want {
			someTag = someTag || have[t]
		}
		switch k {
		case "limit", "marker", "sort_key", "sort_dir", "page_reverse", "fields":
		case "tags":
			for _, t := range want {
				if !have[t] {
					return false
				}
			}
		case "tags-any":
			if !someTag {
				return false
			}
		case "not-tags":
			all := len(want) > 0
			for _, t := range want {
				all = all && have[t]
			}
			if all {
				return false
			}
		case "not-tags-any":
			if someTag {
				return false
			}
		case "loadbalancer_id":
			if !contains(vals, fmt.Sprint(stored["_lb"])) {
				return false
			}
		default:
			if !contains(vals, fmt.Sprint(v[k])) {
				return false
			}
		}
	}
	return true
}
