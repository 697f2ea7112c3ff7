package daemon

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
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
	sock := filepath.Join(t.TempDir(), "cni.sock")
	ln, err := Listen(sock)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	srv := NewServer(ctx, d)
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { cancel(); _ = srv.Close() })
	c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", sock)
		}}}
	return sock, c
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

// TestDrainFinishesRequestsUnderWay: a daemon told to stop while an ADD
// waits for its port data goes on waiting (the watch still runs) and
// answers it; the socket is gone meanwhile, so new requests go to the next
// daemon.
func TestDrainFinishesRequestsUnderWay(t *testing.T) {
	d, _, _ := newDaemon()
	sock := filepath.Join(t.TempDir(), "cni.sock")
	ln, err := Listen(sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := NewServer(context.Background(), d)
	go func() { _ = srv.Serve(ln) }()
	c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", sock)
		}}}
	body, _ := json.Marshal(request("ADD", "web", "u1", "c1"))
	got := make(chan api.Response, 1)
	go func() {
		resp, err := c.Post("http://kuryr"+api.Path, "application/json", bytes.NewReader(body))
		if err != nil {
			t.Error(err)
			got <- api.Response{}
			return
		}
		got <- answer(t, resp)
	}()
	time.Sleep(100 * time.Millisecond) // the ADD is waiting
	drained := make(chan error, 1)
	go func() { drained <- Drain(context.Background(), srv) }()
	time.Sleep(100 * time.Millisecond)
	if _, err := net.Dial("unix", sock); err == nil {
		t.Error("the socket still accepts while draining")
	}
	d.Registry.Set(kuryrPort("web", "u1"))
	if r := <-got; r.Error != nil || r.Result == nil {
		t.Errorf("the ADD under way got %+v, want its result", r)
	}
	if err := <-drained; err != nil {
		t.Errorf("drain: %v", err)
	}
}
