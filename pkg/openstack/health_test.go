package openstack

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"
)

func get(t *testing.T, url string) *http.Request {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	return req
}

// TestHealthRecovery: no answer or a gateway's 503 marks a service down,
// any other answer up again, and each recovery is told once.
func TestHealthRecovery(t *testing.T) {
	h := &Health{down: map[string]time.Time{}}
	told := make(chan string, 4)
	h.OnRecovery(func(s string, d time.Duration) { told <- s })
	req := get(t, "http://neutron/v2.0/ports")
	answer := func(code int) *http.Response { return &http.Response{StatusCode: code} }

	h.observe(ServiceNetwork, req, answer(404), nil) // up and never down: nothing to tell
	h.observe(ServiceNetwork, req, nil, errors.New("connection refused"))
	h.observe(ServiceNetwork, req, answer(http.StatusServiceUnavailable), nil)
	if _, down := h.Down()[ServiceNetwork]; !down {
		t.Fatal("not down after a refused connection and a 503")
	}
	h.observe(ServiceNetwork, req, answer(500), nil) // an answer, though an error
	h.observe(ServiceNetwork, req, answer(200), nil)
	select {
	case s := <-told:
		if s != ServiceNetwork {
			t.Fatalf("told %q", s)
		}
	case <-time.After(time.Second):
		t.Fatal("recovery not told")
	}
	select {
	case s := <-told:
		t.Fatalf("told twice (%q)", s)
	case <-time.After(50 * time.Millisecond):
	}
	// The caller giving up says nothing of the service.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	h.observe(ServiceNetwork, req.WithContext(ctx), nil, context.Canceled)
	if len(h.Down()) != 0 {
		t.Fatalf("down after a cancelled request: %v", h.Down())
	}
}

// TestHealthWatchProbes: a service seen down is probed until it answers;
// one that is up is not probed.
func TestHealthWatchProbes(t *testing.T) {
	var serving atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !serving.Load() {
			w.WriteHeader(http.StatusBadGateway)
			return
		}
		w.WriteHeader(http.StatusOK)
	}))
	defer srv.Close()
	h := &Health{down: map[string]time.Time{}}
	recovered := make(chan struct{})
	h.OnRecovery(func(string, time.Duration) { close(recovered) })
	var probes atomic.Int32
	probe := func(ctx context.Context) error {
		probes.Add(1)
		req := get(t, srv.URL).WithContext(ctx)
		resp, err := http.DefaultTransport.RoundTrip(req)
		h.observe(ServiceLoadBalancer, req, resp, err)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode >= 500 {
			return errors.New(resp.Status)
		}
		return nil
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go h.Watch(ctx, 10*time.Millisecond, map[string]Probe{ServiceLoadBalancer: probe})
	time.Sleep(50 * time.Millisecond)
	if n := probes.Load(); n != 0 {
		t.Fatalf("%d probes of a service never seen down", n)
	}
	_ = probe(ctx) // a request the gateway answers 502: down
	time.Sleep(50 * time.Millisecond)
	if n := probes.Load(); n < 3 {
		t.Fatalf("%d probes while down, want a few", n)
	}
	serving.Store(true)
	select {
	case <-recovered:
	case <-time.After(2 * time.Second):
		t.Fatal("the probes did not see the service answer again")
	}
}
