package octaviatest

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/kuryr-k8s/kuryr/pkg/openstack/openstacktest"
)

// fault is Octavia's (WSME's) error body. Client errors have faultcode
// "Client", server errors (500, 501) "Server".
func fault(code int, format string, a ...any) reply {
	fc := "Client"
	if code >= 500 {
		fc = "Server"
	}
	return reply{code, Object{"faultcode": fc, "faultstring": fmt.Sprintf(format, a...), "debuginfo": nil}}
}

func notFound(resource, id string) reply { return fault(404, "%s %s not found.", resource, id) }

func immutable(resource, id string) reply {
	return fault(409, "%s %s is immutable and cannot be updated.", resource, id)
}

func invalid(format string, a ...any) reply {
	return fault(400, "Validation failure: %s", fmt.Sprintf(format, a...))
}

// unsupported is the ovn provider refusing an option.
func unsupported(format string, a ...any) reply {
	return fault(501, "Provider 'ovn' does not support a requested option: %s", fmt.Sprintf(format, a...))
}

// unhandled is what Octavia answers when its code raises an unexpected
// exception, e.g. on a nested object it does not create.
func unhandled(msg string) reply { return fault(500, "%s", msg) }

func str(o Object, k string) string {
	s, _ := o[k].(string)
	return s
}

func integer(v any) (int, bool) {
	switch n := v.(type) {
	case int:
		return n, true
	case int64:
		return int(n), true
	case float64:
		return int(n), n == float64(int(n))
	case json.Number:
		i, err := n.Int64()
		return int(i), err == nil
	}
	return 0, false
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// objects are the JSON objects of a list field.
func objects(v any) []Object {
	var out []Object
	switch l := v.(type) {
	case []any:
		for _, e := range l {
			if o, ok := e.(Object); ok {
				out = append(out, o)
			}
		}
	case []Object:
		out = l
	}
	return out
}

func tagsOf(o Object) []string { return openstacktest.Tags(o) }

// clone copies maps and slices so that callers and the store share nothing.
func clone(v any) any {
	switch x := v.(type) {
	case map[string]any:
		c := make(Object, len(x))
		for k, e := range x {
			c[k] = clone(e)
		}
		return c
	case []any:
		c := make([]any, len(x))
		for i, e := range x {
			c[i] = clone(e)
		}
		return c
	case []Object:
		c := make([]Object, len(x))
		for i, e := range x {
			c[i] = clone(e).(Object)
		}
		return c
	case []string:
		return append([]string{}, x...)
	}
	return v
}

// decode reads a JSON object body; whole numbers become ints.
func decode(r *http.Request) (Object, error) {
	d := json.NewDecoder(r.Body)
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		if errors.Is(err, io.EOF) {
			return Object{}, nil
		}
		return nil, err
	}
	o, ok := numbers(v).(Object)
	if !ok {
		return nil, errors.New("not a JSON object")
	}
	return o, nil
}

func numbers(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			x[k] = numbers(e)
		}
	case []any:
		for i, e := range x {
			x[i] = numbers(e)
		}
	case json.Number:
		if n, err := x.Int64(); err == nil {
			return int(n)
		}
		fl, _ := x.Float64()
		return fl
	}
	return v
}

// boolParam reads a query flag as oslo's bool_from_string does.
func boolParam(q map[string][]string, k string) bool {
	if len(q[k]) == 0 {
		return false
	}
	return contains([]string{"1", "t", "true", "on", "y", "yes"}, strings.ToLower(q[k][0]))
}
