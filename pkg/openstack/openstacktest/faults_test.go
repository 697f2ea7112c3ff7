package openstacktest

import (
	"io"
	"net/http"
	"testing"
)

func TestFaults(t *testing.T) {
	h := NewFaults()
	done := 0
	srv := Serve(t, func(w http.ResponseWriter, r *http.Request) {
		fail, unanswered := h.Record(r.Method, "ports")
		if Refuse(w, fail, r.Method, "ports") {
			return
		}
		w, flush := Swallow(w, unanswered, r.Method, "ports")
		defer flush()
		done++
		w.WriteHeader(201)
		_, _ = w.Write([]byte("made"))
	})
	get := func(method string) (int, string) {
		req, _ := http.NewRequest(method, srv.URL, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := get("POST"); code != 201 || body != "made" || done != 1 {
		t.Errorf("no hook: %d %q, %d done", code, body, done)
	}
	h.Fail = func(string, string) (int, string) { return 503, "busy" }
	if code, body := get("POST"); code != 503 || body != "busy" || done != 1 {
		t.Errorf("Fail: %d %q, %d done", code, body, done)
	}
	h.Fail = nil
	h.Unanswered = func(string, string) (int, string) { return 504, "late" }
	if code, body := get("POST"); code != 504 || body != "late" || done != 2 {
		t.Errorf("Unanswered: %d %q, %d done", code, body, done)
	}
	if get("GET"); h.WritesLocked() != 3 || h.Requests["GET ports"] != 1 {
		t.Errorf("writes %d, requests %v", h.WritesLocked(), h.Requests)
	}
}

func TestStore(t *testing.T) {
	s := Store{}
	s.Put("ports", "p1", map[string]any{"tags": []any{"a", "b"}})
	if s.Count("ports") != 1 || s.Count("networks") != 0 {
		t.Errorf("counts %d %d", s.Count("ports"), s.Count("networks"))
	}
	if got := Tags(s["ports"]["p1"]); len(got) != 2 || got[1] != "b" {
		t.Errorf("tags %v", got)
	}
}
