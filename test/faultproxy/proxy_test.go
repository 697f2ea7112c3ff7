package faultproxy

import (
	"bytes"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func setup(t *testing.T, f Faults) (*Proxy, string, *atomic.Int32) {
	t.Helper()
	var hits atomic.Int32
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		_, _ = io.WriteString(w, `{"port": {"id": "x"}}`)
	}))
	t.Cleanup(up.Close)
	p, err := New(up.URL, 1)
	if err != nil {
		t.Fatal(err)
	}
	p.Set(f)
	url, stop, err := p.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = stop() })
	return p, url, &hits
}

func post(url string) (int, error) {
	c := http.Client{Timeout: 2 * time.Second}
	resp, err := c.Post(url+"/v2.0/ports", "application/json", strings.NewReader(`{}`))
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	return resp.StatusCode, nil
}

func TestFaults(t *testing.T) {
	tests := []struct {
		name      string
		faults    Faults
		wantErr   bool // the client gets no answer
		wantCode  int
		committed bool // upstream saw the request
	}{
		{"pass", Faults{}, false, 200, true},
		{"server error, nothing done", Faults{ErrorRate: 1}, false, 0, false},
		{"dropped, nothing done", Faults{DropRate: 1}, true, 0, false},
		{"committed, then dropped", Faults{CommitDropRate: 1}, true, 0, true},
		{"committed, then silent", Faults{CommitHangRate: 1, HangFor: 5 * time.Second}, true, 0, true},
		{"other method untouched", Faults{DropRate: 1, Methods: []string{"DELETE"}}, false, 200, true},
		{"other path untouched", Faults{DropRate: 1, PathContains: "/loadbalancers"}, false, 200, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, url, hits := setup(t, tt.faults)
			code, err := post(url)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err %v", err)
			}
			if tt.wantCode != 0 && code != tt.wantCode {
				t.Errorf("code %d, want %d", code, tt.wantCode)
			}
			if !tt.wantErr && tt.wantCode == 0 && code < 500 {
				t.Errorf("code %d, want a server error", code)
			}
			if (hits.Load() > 0) != tt.committed {
				t.Errorf("upstream hits %d, committed %v", hits.Load(), tt.committed)
			}
		})
	}
}

func TestLatencyAndRates(t *testing.T) {
	p, url, _ := setup(t, Faults{Latency: 100 * time.Millisecond})
	start := time.Now()
	if _, err := post(url); err != nil || time.Since(start) < 100*time.Millisecond {
		t.Errorf("latency: %v after %s", err, time.Since(start))
	}
	p.Set(Faults{ErrorRate: 0.3})
	for i := 0; i < 200; i++ {
		_, _ = post(url)
	}
	if s := p.Stats(); s.Errors < 30 || s.Errors > 90 {
		t.Errorf("30%% errors over 200 requests: %+v", s)
	}
}

func TestControlEndpoint(t *testing.T) {
	p, url, _ := setup(t, Faults{})
	req, _ := http.NewRequest(http.MethodPut, url+ControlPrefix+"faults", strings.NewReader(`{"errorRate": 1}`))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if code, _ := post(url); code < 500 || p.Stats().Errors != 1 {
		t.Errorf("after PUT faults: code %d stats %+v", code, p.Stats())
	}
}

// TestAbandoned: a request passed on whose client gives up before the
// upstream answers is counted, not logged as a proxy error.
func TestAbandoned(t *testing.T) {
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-time.After(3 * time.Second):
		}
	}))
	t.Cleanup(slow.Close)
	p, err := New(slow.URL, 1)
	if err != nil {
		t.Fatal(err)
	}
	url, stop, err := p.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = stop() })
	var logged bytes.Buffer
	log.SetOutput(&logged)
	t.Cleanup(func() { log.SetOutput(os.Stderr) })
	c := http.Client{Timeout: 200 * time.Millisecond}
	if resp, err := c.Get(url + "/v2.0/ports"); err == nil {
		resp.Body.Close()
		t.Fatalf("answered %d, want the client's timeout", resp.StatusCode)
	}
	deadline := time.Now().Add(2 * time.Second)
	for p.Stats().Abandoned != 1 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if s := p.Stats(); s.Abandoned != 1 || s.Passed != 1 {
		t.Errorf("stats %+v, want 1 passed and abandoned", s)
	}
	if logged.Len() > 0 {
		t.Errorf("logged %q, want nothing", logged.String())
	}
}
