package openstacktest

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/kuryr-k8s/kuryr/pkg/openstack"
)

// Store holds a fake's objects (JSON fields) by collection and id. The
// fake's lock guards it.
type Store map[string]map[string]map[string]any

// Put stores o under id in a collection, creating the collection.
func (s Store) Put(collection, id string, o map[string]any) {
	if s[collection] == nil {
		s[collection] = map[string]map[string]any{}
	}
	s[collection][id] = o
}

// Count is the number of objects in a collection.
func (s Store) Count(collection string) int { return len(s[collection]) }

// Tags reads an object's tags however they were stored.
func Tags(o map[string]any) []string {
	var out []string
	switch ts := o["tags"].(type) {
	case []string:
		out = ts
	case []any:
		for _, t := range ts {
			out = append(out, fmt.Sprint(t))
		}
	}
	return out
}

// Serve starts a fake's HTTP server, closed at the end of the test.
func Serve(t testing.TB, h http.HandlerFunc) *httptest.Server {
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}

// Clients are noauth clients pointed at a fake's endpoints (5 s timeout).
func Clients(t testing.TB, ep openstack.Endpoints) *openstack.Clients {
	t.Helper()
	c, err := openstack.NewNoAuthClients(ep, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	return c
}
