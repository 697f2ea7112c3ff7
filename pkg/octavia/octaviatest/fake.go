// Package octaviatest is a fake Octavia for unit tests: an HTTP server that
// keeps load balancers, listeners, pools and members in memory and answers
// the load-balancer v2 calls kuryr makes (under /v2.0/lbaas, gophercloud's
// paths, or /v2/lbaas) the way Octavia 11 (API 2.26) with the ovn provider
// (ovn-octavia-provider 3.0), the local cloud's, answers them: the same
// JSON, status codes and faultstrings. It counts requests and can be told to
// fail.
//
// What Octavia does and the fake too: fully populated load balancer creates
// (listeners with default pools and members, pools referenced by name, 400
// for an unnamed pool); the ovn provider's 501s (protocols other than TCP,
// UDP and SCTP, lb_algorithm other than SOURCE_IP_PORT, allowed_cidrs, a
// member without subnet when the load balancer has no VIP subnet); PENDING_*
// states that make writes to a load balancer or its children answer 409;
// 409 for a listener on a port taken with the same transport, for a second
// default pool, for a duplicate member; 500 for a default_pool in POST
// /listeners and for members in POST /pools (Octavia's API takes them but
// its database layer raises: only a load balancer create nests objects);
// the VIP port left behind by a failed fully populated create (see
// LeakedVIPs); 500 for a vip_address in use; tag and field filters; cascade
// deletes; member batch updates; a member the ovn provider lost (see
// LoseMember).
//
// Simplifications: deletes are done at once (Octavia shows PENDING_DELETE
// until the provider is done; here the object is gone, its load balancer
// PENDING_UPDATE); Neutron is not consulted (subnets are not checked, a VIP
// network is not derived from its subnet, a VIP address is allocated from
// 10.0.0.0/16); project_id is optional (under noauth Octavia wants it);
// WSME's input errors (400) are approximated; no pagination or sorting
// (lists come oldest first), no PUT of load balancers, listeners or single
// members (a pool PUT changes its name, admin state and session
// persistence), no health monitors, L7 policies, quotas, statistics or
// failover.
package octaviatest

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/gophercloud/gophercloud/v2"

	"github.com/kuryr-k8s/kuryr/pkg/openstack"
	"github.com/kuryr-k8s/kuryr/pkg/openstack/openstacktest"
)

// Object is an Octavia resource as JSON fields.
type Object = map[string]any

// The collections, as they appear in Requests keys, Fail and Unanswered
// calls, and the Add, Get and List helpers. "status" is the status tree of
// a load balancer (GET /lbaas/loadbalancers/{id}/status).
const (
	LoadBalancers = "loadbalancers"
	Listeners     = "listeners"
	Pools         = "pools"
	Members       = "members"
	Status        = "status"
)

// Fake is an in-memory Octavia.
type Fake struct {
	mu      sync.Mutex
	seq     int
	objects openstacktest.Store // collection -> id -> stored object
	left    map[string]int      // pending load balancer -> GETs before ACTIVE
	leaked  map[string]string   // VIP address -> leaked Neutron port name
	lost    map[string]bool     // members the provider has no record of
	queue   map[string][]func() // load balancer -> the provider's requests to come (MemberByMember)

	// Faults: Requests ("POST loadbalancers", "PUT members", "GET
	// status"), Fail and Unanswered.
	openstacktest.Faults
	// ActiveAfterGets is how many GETs showing a load balancer or one of
	// its children (show, list, status tree) see it PENDING_* after a
	// write before it and its children turn ACTIVE. New sets 1: the first
	// GET after a write shows PENDING_CREATE or PENDING_UPDATE, the next
	// ACTIVE. While PENDING_*, writes to the load balancer or its children
	// answer 409.
	ActiveAfterGets int
	// SessionPersistence makes the provider ovn-octavia-provider 5.0 or
	// later, which maps SOURCE_IP session persistence to its OVN load
	// balancer's affinity and refuses other types (501); without it the
	// provider is 3.0, which takes any type and ignores it.
	SessionPersistence bool
	// RefusalCrashes makes that check crash while it refuses a type, as
	// ovn-octavia-provider 8.0.0 (OpenStack 2025.1) does: its message reads
	// the persistence's type as an attribute of the dict it is given, and
	// Octavia answers 500 "Provider 'ovn' reports error: 'dict' object has
	// no attribute 'type'" (the pool is not created; SOURCE_IP is taken).
	RefusalCrashes bool
	// PoolUpdateCrashes makes a pool PUT that changes the session
	// persistence but does not name admin_state_up end with the pool in
	// ERROR, as with ovn-octavia-provider 8.0.0: its pool_update applies
	// the OVN affinity, then reads the request's admin_state_up (KeyError,
	// "Exception occurred during update of pool") and reports the pool
	// ERROR (Octavia passes a provider only the fields a PUT names).
	PoolUpdateCrashes bool
	// MemberByMember makes the provider work through a pool delete and the
	// member deletes of a batch update one member at a time, the load
	// balancer ACTIVE in between, as ovn-octavia-provider 8.0.0 does (see
	// queue.go).
	MemberByMember bool
	// BusyDeletes counts the cascade deletes of a load balancer accepted
	// while the provider still had its member requests to work through:
	// ovn-octavia-provider 8.0.0 runs the delete beside them (another API
	// worker's queue), fails it half way (ERROR: "'NoneType' object has no
	// attribute 'external_ids'") and may report the load balancer ERROR
	// again after it reported it DELETED.
	BusyDeletes int
	// Instant makes every write settle at once: the write's own answer
	// still shows PENDING_* (as Octavia's does), the next request sees
	// ACTIVE.
	Instant bool
	srv     *httptest.Server
}

// New starts a fake Octavia, closed at the end of the test.
func New(t testing.TB) *Fake {
	f := &Fake{
		objects:         openstacktest.Store{},
		left:            map[string]int{},
		leaked:          map[string]string{},
		lost:            map[string]bool{},
		queue:           map[string][]func(){},
		Faults:          openstacktest.NewFaults(),
		ActiveAfterGets: 1,
	}
	f.srv = openstacktest.Serve(t, f.serve)
	return f
}

// LoseMember makes the provider lose a member, as the ovn provider does
// when an OVN write of its create fails half way: Octavia keeps the member,
// the OVN load balancer has no record of it. Deleting it (alone or by a
// batch update) answers 204 or 202, then the provider fails ("Member <id>
// not found in the pool") and the member stays, in ERROR. Only deleting
// its pool removes it.
func (f *Fake) LoseMember(id string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lost[id] = true
}

// URL is the fake's base URL, the noauth load-balancer endpoint.
func (f *Fake) URL() string { return f.srv.URL }

// Client returns a load-balancer service client pointed at the fake.
func (f *Fake) Client(t testing.TB) *gophercloud.ServiceClient {
	return openstacktest.Clients(t, openstack.Endpoints{Network: f.srv.URL, LoadBalancer: f.srv.URL}).LoadBalancer
}

// Writes is the number of POST, PUT and DELETE requests so far.
func (f *Fake) Writes() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.WritesLocked()
}

type reply struct {
	code int
	body any // nil: no body
}

func (f *Fake) serve(w http.ResponseWriter, r *http.Request) {
	rt := parseRoute(r.URL.Path)
	f.mu.Lock()
	fail, unanswered := f.Record(r.Method, rt.coll)
	f.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	if openstacktest.Refuse(w, fail, r.Method, rt.coll) {
		return
	}
	var body Object
	if r.Method == http.MethodPost || r.Method == http.MethodPut {
		var err error
		if body, err = decode(r); err != nil {
			rep := fault(400, "Invalid JSON body: %v", err)
			openstacktest.WriteJSON(w, rep.code, rep.body)
			return
		}
	}
	f.mu.Lock()
	rep := f.dispatch(r.Method, rt, r.URL.Query(), body)
	var data []byte
	if rep.body != nil {
		data, _ = json.Marshal(rep.body)
	}
	if f.Instant && r.Method != http.MethodGet {
		f.settle()
	}
	f.mu.Unlock()
	// Asked once the fake has done the request, as the hook says.
	w, flush := openstacktest.Swallow(w, unanswered, r.Method, rt.coll)
	defer flush()
	w.WriteHeader(rep.code)
	_, _ = w.Write(data)
}

// route is a parsed /v2[.0]/lbaas/... path.
type route struct {
	coll string // collection, "status" for a status tree, "" if unknown
	id   string // object id (load balancer id for a status tree)
	pool string // parent pool of members
}

func parseRoute(path string) route {
	p := strings.Trim(path, "/")
	for _, v := range []string{"v2.0/", "v2/"} {
		p = strings.TrimPrefix(p, v)
	}
	if !strings.HasPrefix(p, "lbaas/") {
		return route{}
	}
	parts := strings.Split(strings.TrimPrefix(p, "lbaas/"), "/")
	switch {
	case len(parts) <= 2 && (parts[0] == LoadBalancers || parts[0] == Listeners || parts[0] == Pools):
		rt := route{coll: parts[0]}
		if len(parts) == 2 {
			rt.id = parts[1]
		}
		return rt
	case len(parts) == 3 && parts[0] == LoadBalancers && parts[2] == "status":
		return route{coll: Status, id: parts[1]}
	case (len(parts) == 3 || len(parts) == 4) && parts[0] == Pools && parts[2] == Members:
		rt := route{coll: Members, pool: parts[1]}
		if len(parts) == 4 {
			rt.id = parts[3]
		}
		return rt
	}
	return route{}
}

func (f *Fake) dispatch(method string, rt route, q map[string][]string, body Object) reply {
	get, one := method == http.MethodGet, rt.id != ""
	switch {
	case rt.coll == "":
		return fault(404, "The resource could not be found.")
	case rt.coll == Status && get:
		return f.statusTree(rt.id)
	case rt.coll == Members:
		return f.members(method, rt, q, body)
	case get && one:
		return f.show(rt.coll, rt.id)
	case get:
		return f.list(rt.coll, q, nil, "")
	case method == http.MethodPost && !one:
		switch rt.coll {
		case LoadBalancers:
			return f.createLB(body)
		case Listeners:
			return f.createListener(body)
		case Pools:
			return f.createPool(body)
		}
	case method == http.MethodPut && one && rt.coll == Pools:
		return f.updatePool(rt.id, body)
	case method == http.MethodDelete && one:
		switch rt.coll {
		case LoadBalancers:
			return f.deleteLB(rt.id, q)
		case Listeners:
			return f.deleteListener(rt.id)
		case Pools:
			return f.deletePool(rt.id)
		}
	}
	return fault(405, "The method %s is not allowed here (or not modelled by the fake).", method)
}
