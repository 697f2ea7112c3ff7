package neutrontest

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/kuryr-k8s/kuryr/pkg/neutron"
)

// call sends a request to the fake and decodes the answer.
func call(t *testing.T, f *Fake, method, path string, body any) (int, Object) {
	t.Helper()
	var in bytes.Buffer
	if body != nil {
		if err := json.NewEncoder(&in).Encode(body); err != nil {
			t.Fatal(err)
		}
	}
	req, err := http.NewRequest(method, f.URL()+"/v2.0/"+path, &in)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	var out Object
	_ = json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out
}

// errType is the NeutronError type of an answer.
func errType(o Object) string {
	e, _ := o["NeutronError"].(map[string]any)
	return str(e["type"])
}

// step is one request and what it should get: a status and, for a
// refusal, the NeutronError type.
type step struct {
	method, path string
	body         any
	code         int
	typ          string
}

func run(t *testing.T, f *Fake, steps []step) {
	t.Helper()
	for _, s := range steps {
		code, out := call(t, f, s.method, s.path, s.body)
		if code != s.code || s.typ != "" && errType(out) != s.typ {
			t.Errorf("%s %s: %d %v, want %d %s", s.method, s.path, code, out, s.code, s.typ)
		}
	}
}

func TestTags(t *testing.T) {
	f := New(t)
	sg := f.DefaultSecurityGroup("p")
	port := f.Add("ports", Object{"name": "x"})
	run(t, f, []step{
		{"PUT", "security-groups/" + sg + "/tags", Object{"tags": []string{"a", "b"}}, 200, ""},
		{"PUT", "security-groups/" + sg + "/tags", Object{"tags": []string{"a", "a"}}, 400, "InvalidInput"},
		{"PUT", "security-groups/" + sg + "/tags", Object{"other": 1}, 400, "InvalidInput"},
		{"PUT", "security-groups/" + sg + "/tags/c", nil, 201, ""},
		{"PUT", "security-groups/" + sg + "/tags/c", nil, 201, ""},
		{"GET", "security-groups/" + sg + "/tags/c", nil, 204, ""},
		{"GET", "security-groups/" + sg + "/tags/d", nil, 404, "TagNotFound"},
		{"DELETE", "security-groups/" + sg + "/tags/a", nil, 204, ""},
		{"DELETE", "security-groups/" + sg + "/tags/a", nil, 404, "TagNotFound"},
		{"PUT", "security-groups/nope/tags/a", nil, 404, "SecurityGroupNotFound"},
		{"PUT", "ports/" + port + "/tags/a", nil, 201, ""},
		{"DELETE", "ports/" + port + "/tags", nil, 204, ""},
		{"PUT", "ports/" + port + "/tags/a/b", nil, 404, "HTTPNotFound"},
	})
	if _, out := call(t, f, "GET", "security-groups/"+sg+"/tags", nil); len(stringsOf(out["tags"])) != 2 {
		t.Errorf("tags %v, want b and c", out)
	}
	if tags := tagsOf(f.Get("ports", port)); len(tags) != 0 {
		t.Errorf("port tags %v after deleting them all", tags)
	}
}

func TestListFilters(t *testing.T) {
	f := New(t)
	a := f.Add("security-groups", Object{"name": "a", "tags": []string{"x", "y"}, "stateful": true})
	b := f.Add("security-groups", Object{"name": "b", "tags": []string{"y"}, "stateful": false})
	c := f.Add("security-groups", Object{"name": "c"})
	tests := []struct {
		path string
		code int
		want []string // ids, in order
	}{
		{"security-groups?tags=x,y", 200, []string{a}},
		{"security-groups?tags=y", 200, []string{a, b}},
		{"security-groups?tags-any=x,y", 200, []string{a, b}},
		{"security-groups?not-tags=x,y", 200, []string{b, c}},
		{"security-groups?not-tags-any=x", 200, []string{b, c}},
		{"security-groups?stateful=False", 200, []string{b}},
		{"security-groups?name=c&fields=id", 200, []string{c}},
		{"security-groups?bogus=1", 400, nil},
		{"security-group-rules?security_group_id=" + a, 200, []string{}},
		{"security-group-rules?remote_ip=x", 400, nil},
		{"security-group-rules?remote_address_group_id=x", 400, nil},
	}
	for _, tt := range tests {
		code, out := call(t, f, "GET", tt.path, nil)
		if code != tt.code {
			t.Errorf("GET %s: %d %v, want %d", tt.path, code, out, tt.code)
			continue
		}
		if tt.want == nil {
			continue
		}
		var got []string
		key := jsonKey(strings.SplitN(tt.path, "?", 2)[0])
		for _, o := range out[key].([]any) {
			got = append(got, str(o.(map[string]any)["id"]))
		}
		if len(got) != len(tt.want) || len(got) > 0 && (got[0] != tt.want[0] || got[len(got)-1] != tt.want[len(tt.want)-1]) {
			t.Errorf("GET %s: %v, want %v", tt.path, got, tt.want)
		}
	}
	_, out := call(t, f, "GET", "security-groups?bogus=1&tags=x", nil)
	if msg := out["NeutronError"].(map[string]any)["message"]; msg != "['bogus'] is invalid attribute for filtering" {
		t.Errorf("message %q", msg)
	}
}

func TestHooksOnSecurityGroups(t *testing.T) {
	f := New(t)
	f.Fail = func(method, collection string) (int, string) {
		if method == "POST" && collection == "security-groups" {
			return 503, "busy"
		}
		return 0, ""
	}
	run(t, f, []step{{"POST", "security-groups", Object{"security_group": Object{"name": "x"}}, 503, ""}})
	if f.Count("security-groups") != 0 {
		t.Error("a failed create stored a group")
	}
	f.Fail = nil
	sg := f.DefaultSecurityGroup("p")
	rule := rulesOf(f.Get("security-groups", sg))[0]["id"].(string)
	f.Unanswered = func(method, collection string) (int, string) {
		if method == "DELETE" {
			return 500, "lost"
		}
		return 0, ""
	}
	run(t, f, []step{{"DELETE", "security-group-rules/" + rule, nil, 500, ""}})
	if f.Get("security-group-rules", rule) != nil || len(rulesOf(f.Get("security-groups", sg))) != 3 {
		t.Error("an unanswered delete was not done")
	}
	if f.Requests["DELETE security-group-rules"] != 1 {
		t.Errorf("requests %v", f.Requests)
	}
}

// A router's subnets, and the router of a subnet, as Neutron lists them.
func TestRouterSubnets(t *testing.T) {
	f := New(t)
	c := neutron.New(f.Client(t))
	ctx := context.Background()
	a := f.Add("subnets", Object{"network_id": "n-a", "cidr": "10.20.0.0/24"})
	b := f.Add("subnets", Object{"network_id": "n-b", "cidr": "10.21.0.0/24"})
	f.Add("ports", Object{"device_id": "r1", "device_owner": "network:router_gateway", "fixed_ips": []Object{{"subnet_id": "ext"}}})
	// A pod's port on b, listed before the interface when all are.
	f.Add("ports", Object{"id": "0-pod", "device_id": "pod", "device_owner": "compute:kuryr", "fixed_ips": []Object{{"subnet_id": b}}})
	for _, s := range []string{a, b} {
		if err := c.EnsureRouterInterface(ctx, "r1", s); err != nil {
			t.Fatal(err)
		}
	}
	got, err := c.RouterSubnets(ctx, "r1")
	if err != nil || len(got) != 2 {
		t.Fatalf("router subnets %v, %v: want the two interfaces, not the gateway", got, err)
	}
	if r, err := c.RouterOf(ctx, b); err != nil || r != "r1" {
		t.Fatalf("router of %s: %q, %v", b, r, err)
	}
	if r, err := c.RouterOf(ctx, "nowhere"); err != nil || r != "" {
		t.Fatalf("router of a subnet on none: %q, %v", r, err)
	}
}
