// Package faultproxy is the fault-injection tier of kuryr's tests: an HTTP
// reverse proxy between kuryr and an OpenStack API (Neutron, Octavia) that,
// by configuration, delays requests, answers them with server errors, drops
// connections, or lets a request reach the API and commit there and then
// never answers the client (as a timeout or a reset after the commit looks
// to it). Campaigns point kuryr at the proxy and change the faults while
// they run; the proxy counts what it did.
package faultproxy

import (
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"math/rand"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/kuryr-k8s/kuryr/pkg/openstack"
)

// Faults says what to do to the requests it matches. Rates are
// probabilities in [0, 1], drawn once per request in the order listed.
type Faults struct {
	// Latency (plus up to Jitter) is added before a request goes on.
	Latency time.Duration `json:"latency,omitempty"`
	Jitter  time.Duration `json:"jitter,omitempty"`
	// ErrorRate: answer 500/502/503 without forwarding (nothing done).
	ErrorRate float64 `json:"errorRate,omitempty"`
	// DropRate: close the connection without forwarding (nothing done).
	DropRate float64 `json:"dropRate,omitempty"`
	// CommitDropRate: forward, then close the connection without the
	// answer (done, but the client cannot know).
	CommitDropRate float64 `json:"commitDropRate,omitempty"`
	// CommitHangRate: forward, then hold the connection silent for HangFor
	// (or until the client gives up) and close it.
	CommitHangRate float64       `json:"commitHangRate,omitempty"`
	HangFor        time.Duration `json:"hangFor,omitempty"`
	// Methods limits the faults to these methods (all if empty), and
	// PathContains to paths containing it (all if empty).
	Methods      []string `json:"methods,omitempty"`
	PathContains string   `json:"pathContains,omitempty"`
}

// Stats counts requests by what the proxy did to them. Abandoned counts
// requests passed on whose client gave up before the upstream's answer
// began (its timeout; one that gives up during an injected delay is only
// Delayed): counted, not logged, so that a campaign's log keeps what
// matters.
type Stats struct {
	Passed, Delayed, Errors, Drops, CommitDrops, CommitHangs, Abandoned int
}

// Proxy forwards to one upstream.
type Proxy struct {
	upstream  *url.URL
	transport *http.Transport
	mu        sync.Mutex
	faults    Faults
	rnd       *rand.Rand
	stats     Stats
}

// ControlPrefix is the path under which the proxy answers itself:
// PUT .../faults (a Faults in JSON), GET .../stats.
const ControlPrefix = "/_faultproxy/"

// New returns a proxy to upstream (e.g. http://127.0.0.1:9696) with no
// faults; seed makes the fault draws repeatable.
func New(upstream string, seed int64) (*Proxy, error) {
	u, err := url.Parse(upstream)
	if err != nil || u.Host == "" {
		return nil, fmt.Errorf("upstream %q: not a URL", upstream)
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 64
	return &Proxy{upstream: u, transport: tr, rnd: rand.New(rand.NewSource(seed))}, nil
}

// TrustCA makes the proxy verify an https upstream against the CA bundle in
// pemFile (a cloud with a private CA) instead of the system's roots.
func (p *Proxy) TrustCA(pemFile string) error {
	pool, err := openstack.CAPool(pemFile, "the upstream's CA")
	if err != nil {
		return err
	}
	p.transport.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	return nil
}

// Set replaces the faults.
func (p *Proxy) Set(f Faults) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.faults = f
}

// Stats returns the counts so far.
func (p *Proxy) Stats() Stats {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stats
}

// verdict is what happens to one request.
type verdict int

const (
	pass verdict = iota
	fail
	drop
	commitDrop
	commitHang
)

// decide draws the fate of a request, and its delay.
func (p *Proxy) decide(r *http.Request) (verdict, time.Duration, Faults) {
	p.mu.Lock()
	defer p.mu.Unlock()
	f := p.faults
	if (len(f.Methods) > 0 && !slices.Contains(f.Methods, r.Method)) || !strings.Contains(r.URL.Path, f.PathContains) {
		p.stats.Passed++
		return pass, 0, f
	}
	delay := f.Latency
	if f.Jitter > 0 {
		delay += time.Duration(p.rnd.Int63n(int64(f.Jitter)))
	}
	if delay > 0 {
		p.stats.Delayed++
	}
	x := p.rnd.Float64()
	for _, c := range []struct {
		rate float64
		v    verdict
		n    *int
	}{{f.ErrorRate, fail, &p.stats.Errors}, {f.DropRate, drop, &p.stats.Drops},
		{f.CommitDropRate, commitDrop, &p.stats.CommitDrops}, {f.CommitHangRate, commitHang, &p.stats.CommitHangs}} {
		if x < c.rate {
			*c.n++
			return c.v, delay, f
		}
		x -= c.rate
	}
	p.stats.Passed++
	return pass, delay, f
}

// ServeHTTP applies the faults to one request.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if strings.HasPrefix(r.URL.Path, ControlPrefix) {
		p.control(w, r)
		return
	}
	v, delay, f := p.decide(r)
	if delay > 0 {
		select {
		case <-time.After(delay):
		case <-r.Context().Done():
			return
		}
	}
	switch v {
	case fail:
		code := []int{500, 502, 503}[p.pick(3)]
		http.Error(w, `{"NeutronError": {"type": "FaultInjected", "message": "injected by faultproxy"}}`, code)
	case drop:
		hangUp(w)
	case commitDrop, commitHang:
		if _, err := p.forward(r); err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		if v == commitHang {
			select {
			case <-time.After(f.HangFor):
			case <-r.Context().Done():
			}
		}
		hangUp(w)
	default:
		p.pass(w, r)
	}
}

func (p *Proxy) pick(n int) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.rnd.Intn(n)
}

// forward sends the request upstream and reads the whole answer.
func (p *Proxy) forward(r *http.Request) (*http.Response, error) {
	out := r.Clone(r.Context())
	out.URL.Scheme, out.URL.Host, out.Host, out.RequestURI = p.upstream.Scheme, p.upstream.Host, p.upstream.Host, ""
	resp, err := p.transport.RoundTrip(out)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	_, err = io.Copy(io.Discard, resp.Body)
	return resp, err
}

func (p *Proxy) pass(w http.ResponseWriter, r *http.Request) {
	rp := &httputil.ReverseProxy{
		Rewrite:      func(pr *httputil.ProxyRequest) { pr.SetURL(p.upstream); pr.Out.Host = p.upstream.Host },
		Transport:    p.transport,
		ErrorHandler: p.passFailed,
	}
	rp.ServeHTTP(w, r)
}

// passFailed answers 502 to a request the upstream did not answer: quietly
// (counted) if its client has gone, else with the reason, logged. Never
// nothing: net/http would make that a 200.
func (p *Proxy) passFailed(w http.ResponseWriter, r *http.Request, err error) {
	if r.Context().Err() != nil {
		p.mu.Lock()
		p.stats.Abandoned++
		p.mu.Unlock()
		w.WriteHeader(http.StatusBadGateway)
		return
	}
	log.Printf("faultproxy: %s %s: %v", r.Method, r.URL.Path, err)
	http.Error(w, err.Error(), http.StatusBadGateway)
}

// hangUp closes the client's connection without an answer.
func hangUp(w http.ResponseWriter) {
	if hj, ok := w.(http.Hijacker); ok {
		if conn, _, err := hj.Hijack(); err == nil {
			if tc, ok := conn.(*net.TCPConn); ok {
				_ = tc.SetLinger(0) // a reset, as a dying server gives
			}
			_ = conn.Close()
			return
		}
	}
	panic(http.ErrAbortHandler)
}

func (p *Proxy) control(w http.ResponseWriter, r *http.Request) {
	switch strings.TrimPrefix(r.URL.Path, ControlPrefix) {
	case "faults":
		if r.Method == http.MethodPut {
			var f Faults
			if err := json.NewDecoder(r.Body).Decode(&f); err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			p.Set(f)
		}
		p.mu.Lock()
		f := p.faults
		p.mu.Unlock()
		_ = json.NewEncoder(w).Encode(f)
	case "stats":
		_ = json.NewEncoder(w).Encode(p.Stats())
	default:
		http.NotFound(w, r)
	}
}

// Listen serves the proxy on addr (":0" for any port) until Close, and
// returns its URL.
func (p *Proxy) Listen(addr string) (string, func() error, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", nil, err
	}
	srv := &http.Server{Handler: p, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	return "http://" + ln.Addr().String(), srv.Close, nil
}
