package health

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestLivezAlwaysReadyzByChecks(t *testing.T) {
	s := New()
	h := s.Handler()
	get := func(path string) (int, string) {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		return rec.Code, rec.Body.String()
	}
	if code, _ := get("/readyz"); code != 200 {
		t.Errorf("no checks: /readyz %d", code)
	}
	s.AddReadyz("openstack", func() error { return errors.New("connecting") })
	if code, body := get("/readyz"); code != 503 || !strings.Contains(body, "openstack: connecting") {
		t.Errorf("failing check: /readyz %d %q", code, body)
	}
	if code, _ := get("/livez"); code != 200 {
		t.Errorf("/livez %d while not ready", code)
	}
	if code, _ := get("/other"); code != 404 {
		t.Errorf("/other %d", code)
	}
}
