package daemon

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/containernetworking/cni/pkg/types"

	"github.com/kuryr-k8s/kuryr/pkg/cni/api"
)

// serve runs the daemon's socket server on a temporary socket.
func serve(t *testing.T, d *Daemon) (string, *http.Client) {
	t.Helper()
	e := newDrainEnv(t, d)
	return e.sock, e.c
}

func answer(t *testing.T, resp *http.Response) api.Response {
	t.Helper()
	defer resp.Body.Close()
	var r api.Response
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		t.Fatalf("HTTP %d, undecodable answer: %v", resp.StatusCode, err)
	}
	return r
}

func TestServerAnswersOnlyItsPath(t *testing.T) {
	d, _, _ := newDaemon()
	_, c := serve(t, d)
	for _, tc := range []struct {
		method, path string
		want         int
	}{
		{"POST", "/other", 404}, {"GET", api.Path, 405}, {"POST", "/", 404},
	} {
		req, _ := http.NewRequest(tc.method, "http://kuryr"+tc.path, strings.NewReader(`{}`))
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.want {
			t.Errorf("%s %s: HTTP %d, want %d", tc.method, tc.path, resp.StatusCode, tc.want)
		}
	}
}

func TestServerRejectsBadBodies(t *testing.T) {
	d, _, _ := newDaemon()
	_, c := serve(t, d)
	for name, body := range map[string]io.Reader{
		"garbage":   strings.NewReader("\x00\xff{{{"),
		"not JSON":  strings.NewReader("ADD please"),
		"oversized": io.MultiReader(strings.NewReader(`{"command":"`), bytes.NewReader(bytes.Repeat([]byte("A"), 100<<20)), strings.NewReader(`"}`)),
	} {
		resp, err := c.Post("http://kuryr"+api.Path, "application/json", body)
		if err != nil {
			// Cut off while sending: acceptable for the oversized body.
			if name != "oversized" {
				t.Errorf("%s: %v", name, err)
			}
			continue
		}
		if r := answer(t, resp); r.Error == nil || r.Error.Code != types.ErrDecodingFailure {
			t.Errorf("%s: %+v", name, r.Error)
		}
	}
	// Still serving.
	resp, err := c.Post("http://kuryr"+api.Path, "application/json", strings.NewReader(`{"command":"STATUS"}`))
	if err != nil {
		t.Fatal(err)
	}
	if r := answer(t, resp); r.Error != nil {
		t.Errorf("STATUS after bad requests: %+v", r.Error)
	}
}

// A client that never finishes sending is cut off.
func TestServerCutsOffSlowClients(t *testing.T) {
	old := ReadTimeout
	ReadTimeout = 200 * time.Millisecond
	t.Cleanup(func() { ReadTimeout = old })
	d, _, _ := newDaemon()
	sock, _ := serve(t, d)
	conn, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_, _ = io.WriteString(conn, "POST "+api.Path+" HTTP/1.1\r\nHost: k\r\nContent-Length: 1000\r\n\r\n{\"comm")
	_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	start := time.Now()
	_, err = io.ReadAll(conn)
	if err != nil || time.Since(start) > 3*time.Second {
		t.Errorf("half-sent request held for %s (%v)", time.Since(start), err)
	}
}

// DecodeRequest never reads much past its bound, whatever the body's size.
func TestDecodeReadsBounded(t *testing.T) {
	r := &countingReader{r: io.MultiReader(strings.NewReader(`{"command":"`), zeros{})}
	if _, cerr := DecodeRequest(r); cerr == nil || cerr.Code != types.ErrDecodingFailure {
		t.Errorf("endless body: %+v", cerr)
	}
	if r.n > MaxRequestBytes+64<<10 {
		t.Errorf("read %d bytes of an endless body", r.n)
	}
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = 'A'
	}
	return len(p), nil
}

type countingReader struct {
	r io.Reader
	n int
}

func (c *countingReader) Read(p []byte) (int, error) {
	k, err := c.r.Read(p)
	c.n += k
	return k, err
}

// drainEnv serves d on a socket with a stoppable base context, as the
// daemon does, and sends ADDs of pod "web" from the background.
type drainEnv struct {
	sock string
	srv  *http.Server
	stop context.CancelCauseFunc
	c    *http.Client
}

func newDrainEnv(t *testing.T, d *Daemon) *drainEnv {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "cni.sock")
	ln, err := Listen(sock)
	if err != nil {
		t.Fatal(err)
	}
	work, stop := context.WithCancelCause(context.Background())
	srv := NewServer(work, d)
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { stop(nil); _ = srv.Close() })
	c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", sock)
		}}}
	return &drainEnv{sock: sock, srv: srv, stop: stop, c: c}
}

// add sends an ADD for "web" and returns where its answer will come, once
// the daemon is waiting for the pod's port data.
func (e *drainEnv) add(t *testing.T, d *Daemon) <-chan api.Response {
	t.Helper()
	body, _ := json.Marshal(request("ADD", "web", "u1", "c1"))
	got := make(chan api.Response, 1)
	go func() {
		resp, err := e.c.Post("http://kuryr"+api.Path, "application/json", bytes.NewReader(body))
		if err != nil {
			t.Error(err)
			got <- api.Response{}
			return
		}
		got <- answer(t, resp)
	}()
	waitFor(t, "the ADD waiting", func() bool { return d.Registry.waiters() > 0 })
	return got
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// TestDrainFinishesRequestsUnderWay: a daemon told to stop while an ADD
// waits for its port data goes on waiting (the watch still runs) and
// answers it; the socket is gone meanwhile, so new requests go to the next
// daemon.
func TestDrainFinishesRequestsUnderWay(t *testing.T) {
	d, _, _ := newDaemon()
	e := newDrainEnv(t, d)
	got := e.add(t, d)
	drained := make(chan struct{})
	go func() { Drain(context.Background(), e.srv, e.stop); close(drained) }()
	waitFor(t, "the socket gone", func() bool { _, err := os.Stat(e.sock); return err != nil })
	if _, err := net.Dial("unix", e.sock); err == nil {
		t.Error("the socket still accepts while draining")
	}
	d.Registry.Set(kuryrPort("web", "u1"))
	if r := <-got; r.Error != nil || r.Result == nil {
		t.Errorf("the ADD under way got %+v, want its result", r)
	}
	<-drained
}

// TestDrainCutsShortAfterItsTimeout: a request still running when the
// drain runs out of time is answered "try again", saying the daemon
// stopped, before Drain returns (and the process exits).
func TestDrainCutsShortAfterItsTimeout(t *testing.T) {
	defer func(d time.Duration) { DrainTimeout = d }(DrainTimeout)
	DrainTimeout = 100 * time.Millisecond
	d, _, _ := newDaemon()
	d.PortTimeout = time.Minute
	e := newDrainEnv(t, d)
	got := e.add(t, d)
	Drain(context.Background(), e.srv, e.stop)
	// As the process's exit would: an answer not written by now is lost
	// (one written is in the socket for kuryr-cni to read).
	_ = e.srv.Close()
	select {
	case r := <-got:
		if r.Error == nil || r.Error.Code != types.ErrTryAgainLater || !strings.Contains(r.Error.Msg, "stopped") {
			t.Errorf("answer %+v, want try again: the daemon stopped (Drain returned before answering?)", r.Error)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no answer to the request under way")
	}
}

// TestStoppingDaemonKeepsItsSuccessorsSocket: closing a daemon's listener
// removes its socket, but not another daemon's that replaced it.
func TestStoppingDaemonKeepsItsSuccessorsSocket(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "cni.sock")
	old, err := Listen(sock)
	if err != nil {
		t.Fatal(err)
	}
	next, err := Listen(sock)
	if err != nil {
		t.Fatal(err)
	}
	old.Close()
	if _, err := os.Stat(sock); err != nil {
		t.Fatalf("the old daemon removed its successor's socket: %v", err)
	}
	next.Close()
	if _, err := os.Stat(sock); err == nil {
		t.Error("the socket is left after its daemon closed it")
	}
}
