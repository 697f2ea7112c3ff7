package neutrontest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/kuryr-k8s/kuryr/pkg/openstack/openstacktest"
)

// maxTagLen is Neutron's MAX_TAG_LEN.
const maxTagLen = 255

// tags serves the standard-attr-tag extension:
//
//	GET    /v2.0/{collection}/{id}/tags        200 {"tags": [...]}
//	GET    /v2.0/{collection}/{id}/tags/{tag}  204, or 404 TagNotFound
//	PUT    /v2.0/{collection}/{id}/tags        200 {"tags": [...]}: replaces them all
//	PUT    /v2.0/{collection}/{id}/tags/{tag}  201, no body: adds one
//	DELETE /v2.0/{collection}/{id}/tags        204: removes them all
//	DELETE /v2.0/{collection}/{id}/tags/{tag}  204, or 404 TagNotFound
func (f *Fake) tags(w http.ResponseWriter, r *http.Request, collection, id string, rest []string) {
	if len(rest) > 1 {
		noRoute.write(w)
		return
	}
	var tag string
	if len(rest) == 1 {
		tag = rest[0]
		if len(tag) > maxTagLen {
			badRequest("InvalidInput", "Invalid input for operation: '%s' exceeds maximum length of %d.", tag, maxTagLen).write(w)
			return
		}
	}
	var replace []string
	if r.Method == http.MethodPut && len(rest) == 0 {
		var err *apiError
		if replace, err = tagsBody(r); err != nil {
			err.write(w)
			return
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	o, ok := f.objects[collection][id]
	if !ok {
		notFound(collection, id).write(w)
		return
	}
	have := tagsOf(o)
	switch {
	case r.Method == http.MethodGet && len(rest) == 0:
		openstacktest.WriteJSON(w, 200, Object{"tags": append([]string{}, have...)})
	case r.Method == http.MethodGet:
		if !slices.Contains(have, tag) {
			tagNotFound(tag).write(w)
			return
		}
		w.WriteHeader(204)
	case r.Method == http.MethodPut && len(rest) == 0:
		o["tags"] = replace
		touch(o)
		openstacktest.WriteJSON(w, 200, Object{"tags": replace})
	case r.Method == http.MethodPut:
		if !slices.Contains(have, tag) {
			o["tags"] = append(append([]string{}, have...), tag)
			touch(o)
		}
		w.WriteHeader(201)
	case r.Method == http.MethodDelete && len(rest) == 0:
		o["tags"] = []string{}
		touch(o)
		w.WriteHeader(204)
	case r.Method == http.MethodDelete:
		if !slices.Contains(have, tag) {
			tagNotFound(tag).write(w)
			return
		}
		o["tags"] = slices.DeleteFunc(append([]string{}, have...), func(t string) bool { return t == tag })
		touch(o)
		w.WriteHeader(204)
	default:
		noRoute.write(w)
	}
}

// tagsBody reads {"tags": [...]}: a list of unique strings.
func tagsBody(r *http.Request) ([]string, *apiError) {
	var body struct {
		Tags *[]string `json:"tags"`
	}
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil || body.Tags == nil {
		return nil, badRequest("InvalidInput", "Invalid input for operation: Invalid tags body.")
	}
	seen := map[string]bool{}
	for _, t := range *body.Tags {
		if len(t) > maxTagLen {
			return nil, badRequest("InvalidInput", "Invalid input for operation: '%s' exceeds maximum length of %d.", t, maxTagLen)
		}
		if seen[t] {
			return nil, badRequest("InvalidInput", "Invalid input for operation: Duplicate items in the list: '%s'.", t)
		}
		seen[t] = true
	}
	return append([]string{}, *body.Tags...), nil
}

func tagNotFound(tag string) *apiError {
	return &apiError{404, "TagNotFound", fmt.Sprintf("Tag %s could not be found.", tag)}
}

// tagFilter applies one of Neutron's tag filters (each a comma-separated
// list): tags (all of them), tags-any (one of them), not-tags (not all of
// them), not-tags-any (none of them). ok is false when k is no tag filter.
func tagFilter(o Object, k, v string) (match, ok bool) {
	have := map[string]bool{}
	for _, t := range tagsOf(o) {
		have[t] = true
	}
	all, some := true, false
	for _, t := range strings.Split(v, ",") {
		if t == "" {
			continue
		}
		all = all && have[t]
		some = some || have[t]
	}
	switch k {
	case "tags":
		return all, true
	case "tags-any":
		return some, true
	case "not-tags":
		return !all, true
	case "not-tags-any":
		return !some, true
	}
	return false, false
}
