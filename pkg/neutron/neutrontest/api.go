package neutrontest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/kuryr-k8s/kuryr/pkg/openstack/openstacktest"
)

// apiError is a refusal as Neutron words it: an HTTP status and a
// NeutronError body whose type is the exception's class name.
type apiError struct {
	code      int
	typ, text string
}

func (e *apiError) write(w http.ResponseWriter) {
	openstacktest.WriteJSON(w, e.code, Object{"NeutronError": Object{"type": e.typ, "message": e.text, "detail": ""}})
}

func badRequest(typ, format string, args ...any) *apiError {
	return &apiError{400, typ, fmt.Sprintf(format, args...)}
}

func conflict(typ, format string, args ...any) *apiError {
	return &apiError{409, typ, fmt.Sprintf(format, args...)}
}

// notFound words a missing resource as Neutron does for its collection.
func notFound(collection, id string) *apiError {
	switch collection {
	case "security-groups":
		return &apiError{404, "SecurityGroupNotFound", fmt.Sprintf("Security group %s does not exist", id)}
	case "security-group-rules":
		return &apiError{404, "SecurityGroupRuleNotFound", fmt.Sprintf("Security group rule %s does not exist", id)}
	case "ports":
		return &apiError{404, "PortNotFound", fmt.Sprintf("Port %s could not be found.", id)}
	}
	return &apiError{404, "NotFound", id}
}

// noRoute is pecan's answer to a path Neutron does not serve.
var noRoute = &apiError{404, "HTTPNotFound", "The resource could not be found."}

// jsonKey is a collection's key in request and response bodies: the URL
// says security-groups, the body security_groups.
func jsonKey(collection string) string { return strings.ReplaceAll(collection, "-", "_") }

// pagination and display parameters every list accepts.
var listParams = []string{"fields", "limit", "marker", "sort_key", "sort_dir", "page_reverse"}

// checkFilters refuses filters the resource does not have, as Neutron's
// filter validation (on by default since Stein) does.
func checkFilters(q map[string][]string, valid []string) *apiError {
	var bad []string
	for k := range q {
		if !slices.Contains(valid, k) && !slices.Contains(listParams, k) {
			bad = append(bad, k)
		}
	}
	if len(bad) > 0 {
		sort.Strings(bad)
		return badRequest("HTTPBadRequest", "%s is invalid attribute for filtering", pyList(bad))
	}
	return nil
}

// listLocked answers a list: the objects matching q, by id, with only
// the fields asked for. The caller holds f.mu.
func (f *Fake) listLocked(w http.ResponseWriter, collection string, q map[string][]string) {
	out := []Object{}
	for _, o := range f.objects[collection] {
		if matches(o, q) {
			out = append(out, project(o, q["fields"]))
		}
	}
	sort.Slice(out, func(i, j int) bool { return fmt.Sprint(out[i]["id"]) < fmt.Sprint(out[j]["id"]) })
	openstacktest.WriteJSON(w, 200, Object{jsonKey(collection): page(out, q)})
}

// page applies limit and marker as Neutron's native pagination does with
// the default sort (by id): the objects after the marker's id, at most
// limit of them. out is sorted by id (and must hold "id" when marker is
// used).
func page(out []Object, q map[string][]string) []Object {
	if m := q["marker"]; len(m) > 0 {
		i := sort.Search(len(out), func(i int) bool { return fmt.Sprint(out[i]["id"]) > m[0] })
		out = out[i:]
	}
	if l := q["limit"]; len(l) > 0 {
		if n, err := strconv.Atoi(l[0]); err == nil && n > 0 && n < len(out) {
			out = out[:n]
		}
	}
	return out
}

// project keeps the fields asked for (?fields=id&fields=name), all when
// none are.
func project(o Object, fields []string) Object {
	if len(fields) == 0 {
		return o
	}
	out := Object{}
	for _, f := range fields {
		if v, ok := o[f]; ok {
			out[f] = v
		}
	}
	return out
}

// decodeBody reads a request body as JSON fields.
func decodeBody(r *http.Request) (map[string]json.RawMessage, *apiError) {
	var body map[string]json.RawMessage
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		return nil, badRequest("HTTPBadRequest", "Malformed request body: %v", err)
	}
	return body, nil
}

// newID names a new object of the given three-letter kind.
func (f *Fake) newID(kind string) string {
	f.seq++
	return fmt.Sprintf("%s-%04d-0000-0000-000000000000", kind, f.seq)
}

func now() string { return time.Now().UTC().Format("2006-01-02T15:04:05Z") }

// touch records a change the way standard attributes do.
func touch(o Object) {
	switch rev := o["revision_number"].(type) {
	case int:
		o["revision_number"] = rev + 1
	case float64:
		o["revision_number"] = int(rev) + 1
	default:
		o["revision_number"] = 1
	}
	o["updated_at"] = now()
}

// stamp gives a new object its standard attributes.
func stamp(o Object) {
	t := now()
	o["created_at"], o["updated_at"], o["revision_number"] = t, t, 0
}

// stringsOf reads a list of strings however it was stored.
func stringsOf(v any) []string {
	switch l := v.(type) {
	case []string:
		return l
	case []any:
		out := make([]string, 0, len(l))
		for _, s := range l {
			out = append(out, fmt.Sprint(s))
		}
		return out
	}
	return nil
}

// pyList words a list of strings as Python prints it in Neutron's messages.
func pyList(l []string) string {
	quoted := make([]string, len(l))
	for i, s := range l {
		quoted[i] = "'" + s + "'"
	}
	return "[" + strings.Join(quoted, ", ") + "]"
}
