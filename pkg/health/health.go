// Package health serves /livez and /readyz from a process's first second,
// before its slow dependencies (Keystone, the caches, leader election) are
// there: a liveness probe must never kill a process that is only waiting,
// and readiness says in words what it is waiting for.
package health

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sort"
	"sync"
	"time"
)

// Check reports a problem, or nil.
type Check func() error

// Server holds named readiness checks; liveness is the process answering.
type Server struct {
	mu    sync.Mutex
	ready map[string]Check
}

// New returns a server with no checks: ready until one is added.
func New() *Server { return &Server{ready: map[string]Check{}} }

// AddReadyz adds (or replaces) a named readiness check.
func (s *Server) AddReadyz(name string, c Check) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ready[name] = c
}

// Ready runs every readiness check and joins their failures.
func (s *Server) Ready() error {
	s.mu.Lock()
	names := make([]string, 0, len(s.ready))
	for n := range s.ready {
		names = append(names, n)
	}
	checks := make(map[string]Check, len(s.ready))
	for n, c := range s.ready {
		checks[n] = c
	}
	s.mu.Unlock()
	sort.Strings(names)
	var errs []error
	for _, n := range names {
		if err := checks[n](); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", n, err))
		}
	}
	return errors.Join(errs...)
}

// Handler answers GET /livez and GET /readyz, and nothing else.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /livez", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		if err := s.Ready(); err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ok")
	})
	return mux
}

// Start binds addr now (so a port in use is an error at start) and serves
// h on it until ctx ends, over TLS with tlsCfg (nil: plain HTTP).
func Start(ctx context.Context, addr string, h http.Handler, tlsCfg *tls.Config) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("health server: %w", err)
	}
	if tlsCfg != nil {
		ln = tls.NewListener(ln, tlsCfg)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		<-ctx.Done()
		_ = srv.Close()
	}()
	go func() { _ = srv.Serve(ln) }()
	return nil
}
