// Package neutrontest is a fake Neutron for unit tests: an HTTP server that
// keeps ports, networks, subnets, security groups and their rules in
// memory and understands the calls kuryr makes (tag and status filters,
// tags sub-resources, security groups of ports included, trunks and
// allowed address pairs with revision checks; a new binding:host_id
// rebinds a port as ML2 does: DOWN, and unbound without a host; a network is
// deleted with its subnets, and refused while ports other than Neutron's
// own are on it), counts requests, and can be told to fail. Quota details
// count the stored objects against Neutron's default limits (quotas.go). Address groups are kept as
// Neutron 26 keeps them (addressgroups.go); the fake does not enforce
// rules, so whether ML2/OVN honours a rule's remote address group is the
// dataplane probe's question, not the fake's.
package neutrontest

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/gophercloud/gophercloud/v2"

	"github.com/kuryr-k8s/kuryr/pkg/openstack"
	"github.com/kuryr-k8s/kuryr/pkg/openstack/openstacktest"
)

// Object is a Neutron resource as JSON fields.
type Object = map[string]any

// Fake is an in-memory Neutron.
type Fake struct {
	mu      sync.Mutex
	seq     int
	objects openstacktest.Store // collection -> id -> object
	// Faults: Requests ("POST ports" -> count), Fail and Unanswered.
	openstacktest.Faults
	// TagOnCreate mimics the tag-ports-during-bulk-creation extension.
	TagOnCreate bool
	// CheckSecurityGroups makes port creates and updates refuse security
	// groups the fake does not hold (404 SecurityGroupNotFound), as Neutron
	// does. Off by default: older tests give ports made-up group ids.
	CheckSecurityGroups bool
	// Quotas override Neutron's default limits (resource → limit, -1
	// none) in quotas/{project}/details (quotas.go).
	Quotas map[string]int
	srv    *httptest.Server
}

// New starts a fake Neutron, closed at the end of the test.
func New(t testing.TB) *Fake {
	f := &Fake{objects: openstacktest.Store{}, Faults: openstacktest.NewFaults(), TagOnCreate: true}
	f.srv = openstacktest.Serve(t, f.serve)
	return f
}

// Client returns a network service client pointed at the fake.
func (f *Fake) Client(t testing.TB) *gophercloud.ServiceClient {
	return openstacktest.Clients(t, openstack.Endpoints{Network: f.srv.URL}).Network
}

// URL is the fake's endpoint, for tests that speak plain HTTP.
func (f *Fake) URL() string { return f.srv.URL }

// Add stores an object and returns its id.
func (f *Fake) Add(collection string, o Object) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.add(collection, o)
}

func (f *Fake) add(collection string, o Object) string {
	if _, ok := o["id"]; !ok {
		f.seq++
		o["id"] = fmt.Sprintf("%s-%04d-0000-0000-000000000000", strings.TrimSuffix(collection, "s")[:3], f.seq)
	}
	f.objects.Put(collection, o["id"].(string), o)
	return o["id"].(string)
}

// Get returns a stored object, or nil.
func (f *Fake) Get(collection, id string) Object {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.objects[collection][id]
}

// Count is the number of stored objects in a collection.
func (f *Fake) Count(collection string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.objects.Count(collection)
}

// Writes is the number of POST, PUT and DELETE requests so far.
func (f *Fake) Writes() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.WritesLocked()
}

func (f *Fake) serve(w http.ResponseWriter, r *http.Request) {
	parts := pathParts(r)
	collection := parts[0]
	f.mu.Lock()
	fail, unanswered := f.Record(r.Method, collection)
	held := f.HoldLocked(w, r, collection)
	f.mu.Unlock()
	if held || openstacktest.Refuse(w, fail, r.Method, collection) {
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w, flush := openstacktest.Swallow(w, unanswered, r.Method, collection)
	defer flush()
	f.route(w, r, parts)
}

// Land does the requests Late held, in the order they came, as Neutron
// does requests late that their clients gave up on.
func (f *Fake) Land() {
	f.mu.Lock()
	held := f.TakeLateLocked()
	f.mu.Unlock()
	for _, r := range held {
		f.route(httptest.NewRecorder(), r, pathParts(r))
	}
}

// pathParts are a request's path segments after /v2.0: collection, id, ...
func pathParts(r *http.Request) []string {
	return strings.Split(strings.Trim(strings.TrimPrefix(r.URL.Path, "/v2.0"), "/"), "/")
}

func (f *Fake) route(w http.ResponseWriter, r *http.Request, parts []string) {
	collection := parts[0]
	switch {
	case collection == "address-groups":
		f.addressGroups(w, r, parts[1:])
	case collection == "trunks":
		f.trunks(w, r, parts[1:])
	case collection == "quotas":
		f.quotas(w, r, parts[1:])
	case len(parts) >= 3 && parts[2] == "tags":
		f.tags(w, r, collection, parts[1], parts[3:])
	case collection == "security-groups":
		f.securityGroups(w, r, parts[1:])
	case collection == "security-group-rules":
		f.securityGroupRules(w, r, parts[1:])
	case len(parts) == 2 && collection == "ports" && r.Method == http.MethodPut:
		f.updatePort(w, r, parts[1])
	case len(parts) == 2 && (collection == "networks" || collection == "subnets") && r.Method == http.MethodPut:
		f.rename(w, r, collection, parts[1])
	case len(parts) == 1 && r.Method == http.MethodGet:
		f.list(w, r, collection)
	case len(parts) == 1 && r.Method == http.MethodPost:
		f.create(w, r, collection)
	case len(parts) == 2 && r.Method == http.MethodGet:
		f.show(w, collection, parts[1])
	case len(parts) == 2 && r.Method == http.MethodDelete:
		f.remove(w, collection, parts[1])
	case len(parts) == 3 && collection == "routers" && r.Method == http.MethodPut:
		f.routerInterface(w, r, parts[1], parts[2])
	default:
		openstacktest.WriteJSON(w, 404, Object{"NeutronError": Object{"type": "NotFound", "message": r.Method + " " + r.URL.Path}})
	}
}

// Set sets a field of a stored object (e.g. a port's status, as OVN sets
// it once the port is plugged); false if there is no such object.
func (f *Fake) Set(collection, id, field string, value any) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	o, ok := f.objects[collection][id]
	if ok {
		o[field] = value
	}
	return ok
}

// IDs are the ids of a collection's objects.
func (f *Fake) IDs(collection string) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for id := range f.objects[collection] {
		out = append(out, id)
	}
	return out
}
