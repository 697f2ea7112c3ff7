package neutrontest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"

	"github.com/kuryr-k8s/kuryr/pkg/neutron"
	"github.com/kuryr-k8s/kuryr/pkg/openstack/openstacktest"
)

// Address groups as Neutron 26 keeps them: addresses stored as host
// prefixes (10.0.0.5 → 10.0.0.5/32), a set; add_addresses refuses the
// whole call (400 AddressesAlreadyExist) when one is there already;
// remove_addresses refuses the whole call (404 AddressesNotFound) when one
// is not there; no tags (the tags
// sub-resource answers 404, a tags filter 400); a group a rule names is
// not deleted (409 AddressGroupInUse).
func (f *Fake) addressGroups(w http.ResponseWriter, r *http.Request, rest []string) {
	switch {
	case len(rest) >= 2 && rest[1] == "tags":
		notFound("address-groups/tags", rest[0]).write(w)
	case len(rest) == 0 && r.Method == http.MethodGet:
		if _, ok := r.URL.Query()["tags"]; ok {
			badRequest("HTTPBadRequest", "['tags'] is invalid attribute for filtering").write(w)
			return
		}
		f.list(w, r, "address-groups")
	case len(rest) == 0 && r.Method == http.MethodPost:
		var body struct {
			AddressGroup Object `json:"address_group"`
		}
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil || body.AddressGroup == nil {
			badRequest("HTTPBadRequest", "missing address_group").write(w)
			return
		}
		f.createAddressGroup(w, body.AddressGroup)
	case len(rest) == 1 && r.Method == http.MethodGet:
		f.show(w, "address-groups", rest[0])
	case len(rest) == 1 && r.Method == http.MethodDelete:
		f.deleteAddressGroup(w, rest[0])
	case len(rest) == 2 && r.Method == http.MethodPut && (rest[1] == "add_addresses" || rest[1] == "remove_addresses"):
		var body struct {
			Addresses []string `json:"addresses"`
		}
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
			badRequest("HTTPBadRequest", "invalid body: %v", err).write(w)
			return
		}
		f.changeAddresses(w, rest[0], rest[1] == "add_addresses", body.Addresses)
	default:
		notFound("address-groups", r.URL.Path).write(w)
	}
}

func hostPrefixes(in []string) ([]string, *apiError) {
	out := []string{}
	for _, a := range in {
		p, err := neutron.HostPrefix(a)
		if err != nil {
			return nil, badRequest("HTTPBadRequest", "Invalid input for addresses. Reason: '%s' is not a valid IP subnet.", a)
		}
		if !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out, nil
}

func (f *Fake) createAddressGroup(w http.ResponseWriter, in Object) {
	var raw []string
	if l, ok := in["addresses"].([]any); ok {
		for _, a := range l {
			raw = append(raw, fmt.Sprint(a))
		}
	}
	addrs, aerr := hostPrefixes(raw)
	if aerr != nil {
		aerr.write(w)
		return
	}
	o := Object{"name": str(in["name"]), "description": str(in["description"]), "addresses": addrs,
		"project_id": str(in["project_id"]), "created_at": "2026-01-01T00:00:00Z"}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.add("address-groups", o)
	openstacktest.WriteJSON(w, 201, Object{"address_group": o})
}

func (f *Fake) deleteAddressGroup(w http.ResponseWriter, id string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.objects["address-groups"][id]; !ok {
		notFound("address-groups", id).write(w)
		return
	}
	for _, rule := range f.objects["security-group-rules"] {
		if rule["remote_address_group_id"] == id {
			conflict("AddressGroupInUse", "Address group %s is in use on one or more security group rules.", id).write(w)
			return
		}
	}
	delete(f.objects["address-groups"], id)
	w.WriteHeader(204)
}

func (f *Fake) changeAddresses(w http.ResponseWriter, id string, add bool, in []string) {
	addrs, aerr := hostPrefixes(in)
	if aerr != nil {
		aerr.write(w)
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	g, ok := f.objects["address-groups"][id]
	if !ok {
		notFound("address-groups", id).write(w)
		return
	}
	have, _ := g["addresses"].([]string)
	var next []string
	if add {
		var there []string
		for _, a := range addrs {
			if slices.Contains(have, a) {
				there = append(there, a)
			}
		}
		if len(there) > 0 {
			badRequest("AddressesAlreadyExist", "Addresses %q already exist in the address group %s.", there, id).write(w)
			return
		}
		next = append(slices.Clone(have), addrs...)
	} else {
		var missing []string
		for _, a := range addrs {
			if !slices.Contains(have, a) {
				missing = append(missing, a)
			}
		}
		if len(missing) > 0 {
			(&apiError{404, "AddressesNotFound", fmt.Sprintf("Addresses %q not found in the address group %s.", missing, id)}).write(w)
			return
		}
		for _, a := range have {
			if !slices.Contains(addrs, a) {
				next = append(next, a)
			}
		}
	}
	g["addresses"] = nonNilStrings(next)
	openstacktest.WriteJSON(w, 200, Object{"address_group": g})
}

func nonNilStrings(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// AddressGroupAddresses returns the addresses an address group holds (nil
// when there is no such group).
func (f *Fake) AddressGroupAddresses(id string) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	g, ok := f.objects["address-groups"][id]
	if !ok {
		return nil
	}
	a, _ := g["addresses"].([]string)
	return slices.Clone(a)
}
