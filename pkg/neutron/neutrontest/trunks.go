package neutrontest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"

	"github.com/kuryr-k8s/kuryr/pkg/openstack/openstacktest"
)

// Trunks as ML2/OVN's trunk plugin keeps them (Neutron 26):
//
//   - a trunk has a parent port, which then shows trunk_details
//     {trunk_id, sub_ports}; a port parent of a trunk or subport of one
//     cannot join another (409 TrunkPortInUse);
//   - add_subports is atomic: a VLAN id already used on the trunk, or
//     twice in the call, refuses it all (409 DuplicateSubPort), as does a
//     port that does not exist (404 PortNotFound) or one with a device_id
//     (409 PortInUse: "used for other purposes");
//   - an attached subport gets device_owner trunk:subport, binding:vif_type
//     ovs, no binding:host_id, and its parent's status (OVN then claims it
//     with the parent);
//   - remove_subports refuses it all for a port not on the trunk (404
//     SubPortNotFound); a detached port gets device_owner "", vif_type
//     unbound and goes DOWN;
//   - a subport or a parent cannot be deleted (409 PortInUseAsSubPort,
//     PortInUseAsTrunkParent); a trunk with subports cannot be deleted
//     (409 TrunkInUse).
func (f *Fake) trunks(w http.ResponseWriter, r *http.Request, rest []string) {
	switch {
	case len(rest) == 0 && r.Method == http.MethodPost:
		in, err := member(r, "trunk")
		if err != nil {
			err.write(w)
			return
		}
		f.createTrunk(w, in)
	case len(rest) == 0 && r.Method == http.MethodGet:
		f.list(w, r, "trunks")
	case len(rest) == 1 && r.Method == http.MethodGet:
		f.show(w, "trunks", rest[0])
	case len(rest) == 1 && r.Method == http.MethodDelete:
		f.deleteTrunk(w, rest[0])
	case len(rest) == 2 && r.Method == http.MethodGet && rest[1] == "get_subports":
		f.mu.Lock()
		defer f.mu.Unlock()
		if t := f.trunkLocked(w, rest[0]); t != nil {
			openstacktest.WriteJSON(w, 200, Object{"sub_ports": subportsOf(t)})
		}
	case len(rest) == 2 && r.Method == http.MethodPut && (rest[1] == "add_subports" || rest[1] == "remove_subports"):
		var body struct {
			SubPorts []Object `json:"sub_ports"`
		}
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
			badRequest("HTTPBadRequest", "invalid body: %v", err).write(w)
			return
		}
		f.changeSubports(w, rest[0], rest[1] == "add_subports", body.SubPorts)
	default:
		noRoute.write(w)
	}
}

// trunkLocked is trunk id, or nil once 404 is answered; the caller holds
// f.mu.
func (f *Fake) trunkLocked(w http.ResponseWriter, id string) Object {
	t, ok := f.objects["trunks"][id]
	if !ok {
		notFound("trunks", id).write(w)
		return nil
	}
	return t
}

// subportsOf are a trunk's subports as JSON objects.
func subportsOf(t Object) []Object {
	raw, _ := json.Marshal(t["sub_ports"])
	out := []Object{}
	_ = json.Unmarshal(raw, &out)
	return out
}

func (f *Fake) createTrunk(w http.ResponseWriter, in Object) {
	f.mu.Lock()
	defer f.mu.Unlock()
	parent := str(in["port_id"])
	if _, ok := f.objects["ports"][parent]; !ok {
		notFound("ports", parent).write(w)
		return
	}
	if err := f.checkFreeLocked(parent); err != nil {
		err.write(w)
		return
	}
	t := Object{"id": f.newID("trk"), "port_id": parent, "name": in["name"], "status": "ACTIVE",
		"admin_state_up": true, "project_id": in["project_id"], "sub_ports": []Object{}, "tags": []string{},
		"created_at": now(), "revision_number": 0}
	f.add("trunks", t)
	if subs := subportsOf(in); len(subs) > 0 {
		if err := f.attachLocked(t, subs); err != nil {
			delete(f.objects["trunks"], t["id"].(string))
			err.write(w)
			return
		}
	}
	f.syncParentLocked(t)
	openstacktest.WriteJSON(w, 201, Object{"trunk": t})
}

func (f *Fake) deleteTrunk(w http.ResponseWriter, id string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	t := f.trunkLocked(w, id)
	if t == nil {
		return
	}
	if len(subportsOf(t)) > 0 {
		conflict("TrunkInUse", "Trunk %s is currently in use.", id).write(w)
		return
	}
	if p := f.objects["ports"][str(t["port_id"])]; p != nil {
		delete(p, "trunk_details")
	}
	delete(f.objects["trunks"], id)
	w.WriteHeader(204)
}

// checkFreeLocked refuses a port already in a trunk, as parent or subport.
func (f *Fake) checkFreeLocked(port string) *apiError {
	for _, t := range f.objects["trunks"] {
		if str(t["port_id"]) == port {
			return conflict("TrunkPortInUse", "Port %s is in use by another trunk.", port)
		}
		for _, s := range subportsOf(t) {
			if str(s["port_id"]) == port {
				return conflict("TrunkPortInUse", "Port %s is in use by another trunk.", port)
			}
		}
	}
	return nil
}

func (f *Fake) changeSubports(w http.ResponseWriter, id string, add bool, subs []Object) {
	f.mu.Lock()
	defer f.mu.Unlock()
	t := f.trunkLocked(w, id)
	if t == nil {
		return
	}
	var err *apiError
	if add {
		err = f.attachLocked(t, subs)
	} else {
		err = f.detachLocked(t, subs)
	}
	if err != nil {
		err.write(w)
		return
	}
	touch(t)
	f.syncParentLocked(t)
	openstacktest.WriteJSON(w, 200, t)
}

// attachLocked adds subports to t, all or none.
func (f *Fake) attachLocked(t Object, subs []Object) *apiError {
	have := subportsOf(t)
	used := map[string]bool{}
	for _, s := range have {
		used[fmt.Sprint(s["segmentation_id"])] = true
	}
	parent := f.objects["ports"][str(t["port_id"])]
	for _, s := range subs {
		port := str(s["port_id"])
		if _, ok := f.objects["ports"][port]; !ok {
			return notFound("ports", port)
		}
		if err := f.checkFreeLocked(port); err != nil {
			return err
		}
		if p := f.objects["ports"][port]; str(p["device_id"]) != "" {
			return conflict("PortInUse", "Unable to complete operation on port %s for network %v. "+
				"Port already has an attached device %v.", port, p["network_id"], p["device_id"])
		}
		seg := fmt.Sprint(s["segmentation_id"])
		if used[seg] {
			return conflict("DuplicateSubPort", "segmentation_type %v and segmentation_id %s already in use on trunk %s.",
				s["segmentation_type"], seg, t["id"])
		}
		used[seg] = true
	}
	for _, s := range subs {
		p := f.objects["ports"][str(s["port_id"])]
		p["device_owner"], p["binding:vif_type"], p["binding:host_id"] = "trunk:subport", "ovs", ""
		if parent != nil {
			p["status"] = parent["status"]
		}
		touch(p)
		have = append(have, Object{"port_id": s["port_id"], "segmentation_type": s["segmentation_type"],
			"segmentation_id": s["segmentation_id"], "mac_address": p["mac_address"]})
	}
	t["sub_ports"] = have
	return nil
}

// detachLocked removes subports from t, all or none.
func (f *Fake) detachLocked(t Object, subs []Object) *apiError {
	have := subportsOf(t)
	var keep []Object
	gone := map[string]bool{}
	for _, s := range subs {
		gone[str(s["port_id"])] = true
	}
	for _, s := range have {
		if gone[str(s["port_id"])] {
			delete(gone, str(s["port_id"]))
			continue
		}
		keep = append(keep, s)
	}
	for port := range gone {
		return &apiError{404, "SubPortNotFound", fmt.Sprintf("SubPort %s on trunk %s could not be found.", port, t["id"])}
	}
	for _, s := range subs {
		if p := f.objects["ports"][str(s["port_id"])]; p != nil {
			p["device_owner"], p["binding:vif_type"], p["status"] = "", "unbound", "DOWN"
			touch(p)
		}
	}
	if keep == nil {
		keep = []Object{}
	}
	t["sub_ports"] = keep
	return nil
}

// syncParentLocked shows t on its parent port, as trunk_details.
func (f *Fake) syncParentLocked(t Object) {
	if p := f.objects["ports"][str(t["port_id"])]; p != nil {
		p["trunk_details"] = Object{"trunk_id": t["id"], "sub_ports": subportsOf(t)}
	}
}

// trunkUseLocked is why a port cannot be deleted (nil if it can).
func (f *Fake) trunkUseLocked(port string) *apiError {
	for _, t := range f.objects["trunks"] {
		if str(t["port_id"]) == port {
			return conflict("PortInUseAsTrunkParent", "Port %s is currently a parent port for trunk %s.", port, t["id"])
		}
		if slices.ContainsFunc(subportsOf(t), func(s Object) bool { return str(s["port_id"]) == port }) {
			return conflict("PortInUseAsSubPort", "Port %s is currently a subport for trunk %s.", port, t["id"])
		}
	}
	return nil
}
