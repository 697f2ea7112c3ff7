package neutrontest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/kuryr-k8s/kuryr/pkg/openstack/openstacktest"
)

// singular is the body key of one object of a collection.
func singular(collection string) string {
	if collection == "subnetpools" {
		return "subnetpool"
	}
	return strings.TrimSuffix(jsonKey(collection), "s")
}

func (f *Fake) list(w http.ResponseWriter, r *http.Request, collection string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.listLocked(w, collection, r.URL.Query())
}

// matches applies Neutron's filters: tags (tags, tags-any, not-tags,
// not-tags-any), and exact field values (a field given several times
// matches any of them: id=A&id=B).
func matches(o Object, q map[string][]string) bool {
	for k, vs := range q {
		if slices.Contains(listParams, k) {
			continue
		}
		if k == "fixed_ips" { // fixed_ips=subnet_id=X, fixed_ips=ip_address=Y: some address matches each
			for _, v := range vs {
				if !hasFixedIP(o, v) {
					return false
				}
			}
			continue
		}
		if match, ok := tagFilter(o, k, vs[0]); ok {
			if !match {
				return false
			}
			continue
		}
		if b, ok := o[k].(bool); ok {
			if want, err := strconv.ParseBool(vs[0]); err != nil || want != b {
				return false
			}
			continue
		}
		if !slices.Contains(vs, fmt.Sprint(o[k])) { // a field given several times: any of them
			return false
		}
	}
	return true
}

// hasFixedIP says whether one of o's fixed IPs has field=value ("subnet_id=X").
func hasFixedIP(o Object, filter string) bool {
	key, value, _ := strings.Cut(filter, "=")
	raw, _ := json.Marshal(o["fixed_ips"])
	var ips []map[string]any
	_ = json.Unmarshal(raw, &ips)
	for _, ip := range ips {
		if fmt.Sprint(ip[key]) == value {
			return true
		}
	}
	return false
}

func tagsOf(o Object) []string { return openstacktest.Tags(o) }

func (f *Fake) create(w http.ResponseWriter, r *http.Request, collection string) {
	body, aerr := decodeBody(r)
	if aerr != nil {
		aerr.write(w)
		return
	}
	var items []Object
	raw, bulk := body[collection] // bulk create: {"ports": [...]}
	if bulk {
		_ = json.Unmarshal(raw, &items)
	} else {
		var o Object
		_ = json.Unmarshal(body[singular(collection)], &o)
		if o == nil {
			openstacktest.WriteJSON(w, 400, Object{"NeutronError": Object{"message": "missing " + singular(collection)}})
			return
		}
		items = []Object{o}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	// Neutron's bulk create is atomic: one refusal creates nothing.
	for _, o := range items {
		if collection == "ports" {
			if aerr := f.checkPort(o); aerr != nil {
				aerr.write(w)
				return
			}
		}
	}
	out := []Object{}
	for _, o := range items {
		out = append(out, f.createOne(collection, o))
	}
	if bulk {
		openstacktest.WriteJSON(w, 201, Object{collection: out})
		return
	}
	openstacktest.WriteJSON(w, 201, Object{singular(collection): out[0]})
}

// createOne stores a new object; the caller holds f.mu.
func (f *Fake) createOne(collection string, o Object) Object {
	switch collection {
	case "ports":
		f.completePort(o)
	case "subnets":
		if _, ok := o["cidr"]; !ok {
			f.seq++
			o["cidr"] = fmt.Sprintf("10.10.%d.0/24", f.seq%250)
			o["gateway_ip"] = fmt.Sprintf("10.10.%d.1", f.seq%250)
		}
		defer f.listSubnet(o) // once it has its id
	}
	if !f.TagOnCreate || collection != "ports" {
		o["tags"] = []string{}
	}
	if _, ok := o["created_at"]; !ok {
		o["created_at"] = time.Now().UTC().Format("2006-01-02T15:04:05Z")
	}
	f.add(collection, o)
	return o
}

// listSubnet adds a new subnet to its network's list, as Neutron shows
// it; the caller holds f.mu.
func (f *Fake) listSubnet(o Object) {
	id, _ := o["network_id"].(string)
	if n := f.objects["networks"][id]; n != nil {
		subs, _ := n["subnets"].([]string)
		n["subnets"] = append(subs, o["id"].(string))
	}
}

// completePort fills what Neutron would: MAC, an address on the requested
// subnet, binding details (unbound without a host), status DOWN.
func (f *Fake) completePort(o Object) {
	f.seq++
	o["mac_address"] = fmt.Sprintf("fa:16:3e:00:%02x:%02x", f.seq/256, f.seq%256)
	o["status"] = "DOWN"
	o["binding:vif_type"] = "ovs"
	o["binding:vif_details"] = Object{"bridge_name": "br-int"}
	if str(o["binding:host_id"]) == "" { // nothing to bind to (a subport-to-be)
		o["binding:vif_type"], o["binding:vif_details"] = "unbound", Object{}
	}
	subnet := ""
	if ips, ok := o["fixed_ips"].([]any); ok && len(ips) > 0 {
		subnet, _ = ips[0].(map[string]any)["subnet_id"].(string)
	}
	o["fixed_ips"] = []Object{{"subnet_id": subnet, "ip_address": fmt.Sprintf("10.10.0.%d", 10+f.seq%200)}}
}

func (f *Fake) show(w http.ResponseWriter, collection, id string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	o, ok := f.objects[collection][id]
	if !ok {
		notFound(collection, id).write(w)
		return
	}
	openstacktest.WriteJSON(w, 200, Object{singular(collection): o})
}

func (f *Fake) remove(w http.ResponseWriter, collection, id string) {
	f.mu.Lock()
	_, ok := f.objects[collection][id]
	if ok && collection == "ports" {
		if aerr := f.trunkUseLocked(id); aerr != nil {
			f.mu.Unlock()
			aerr.write(w)
			return
		}
	}
	if ok && collection == "networks" {
		if aerr := f.removeNetwork(id); aerr != nil {
			f.mu.Unlock()
			aerr.write(w)
			return
		}
	}
	delete(f.objects[collection], id)
	f.mu.Unlock()
	if !ok {
		notFound(collection, id).write(w)
		return
	}
	w.WriteHeader(204)
}

// autoDeleted are the owners of the ports Neutron deletes with their
// network; any other port (a router interface included) makes it refuse.
var autoDeleted = []string{"network:dhcp", "network:distributed"}

// removeNetwork deletes a network's subnets and own ports, or refuses
// (409 NetworkInUse) while other ports remain, as Neutron does. The caller
// holds f.mu.
func (f *Fake) removeNetwork(id string) *apiError {
	var own []string
	for pid, p := range f.objects["ports"] {
		if p["network_id"] != id {
			continue
		}
		if owner, _ := p["device_owner"].(string); !slices.Contains(autoDeleted, owner) {
			return conflict("NetworkInUse", "Unable to complete operation on network %s. "+
				"There are one or more ports still in use on the network.", id)
		}
		own = append(own, pid)
	}
	for _, pid := range own {
		delete(f.objects["ports"], pid)
	}
	for sid, s := range f.objects["subnets"] {
		if s["network_id"] == id {
			delete(f.objects["subnets"], sid)
		}
	}
	return nil
}

// routerInterface attaches or detaches a subnet as Neutron does: a port on
// the subnet whose device is the router.
func (f *Fake) routerInterface(w http.ResponseWriter, r *http.Request, router, action string) {
	var body struct {
		SubnetID string `json:"subnet_id"`
	}
	_ = json.NewDecoder(r.Body).Decode(&body)
	f.mu.Lock()
	defer f.mu.Unlock()
	for id, p := range f.objects["ports"] {
		ips, _ := p["fixed_ips"].([]Object)
		if p["device_id"] == router && len(ips) > 0 && ips[0]["subnet_id"] == body.SubnetID {
			if action == "remove_router_interface" {
				delete(f.objects["ports"], id)
				openstacktest.WriteJSON(w, 200, Object{"id": router, "subnet_id": body.SubnetID})
				return
			}
			openstacktest.WriteJSON(w, 400, Object{"NeutronError": Object{"message": "Router already has a port on subnet"}})
			return
		}
	}
	if action == "remove_router_interface" {
		openstacktest.WriteJSON(w, 404, Object{"NeutronError": Object{"type": "RouterInterfaceNotFoundForSubnet"}})
		return
	}
	var network any
	if s := f.objects["subnets"][body.SubnetID]; s != nil {
		network = s["network_id"]
	}
	port := f.add("ports", Object{"device_id": router, "device_owner": "network:router_interface", "network_id": network,
		"fixed_ips": []Object{{"subnet_id": body.SubnetID, "ip_address": "10.10.0.1"}}})
	openstacktest.WriteJSON(w, 200, Object{"id": router, "subnet_id": body.SubnetID, "port_id": port})
}
