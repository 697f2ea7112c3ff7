package svcports

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// HealthServers answer the healthCheckNodePorts of LoadBalancer Services
// with externalTrafficPolicy Local, as kube-proxy does: an external load
// balancer probes every node there and sends only to nodes that answer 200
// (the node has a ready endpoint of the Service); the others answer 503.
type HealthServers struct {
	// Listen opens a port on all of the node's addresses; nil: net.Listen
	// in the calling thread's network namespace (tests give their own).
	Listen func(port uint16) (net.Listener, error)

	// broken: the node ports were not programmed; every check answers 503
	// with serviceProxyHealthy false.
	broken  atomic.Bool
	mu      sync.Mutex
	servers map[uint16]*healthServer
}

type healthServer struct {
	srv   *http.Server
	state atomic.Pointer[HealthCheck]
	owner *HealthServers
}

// healthBody is kube-proxy's answer, field for field.
type healthBody struct {
	Service struct {
		Namespace string `json:"namespace"`
		Name      string `json:"name"`
	} `json:"service"`
	LocalEndpoints      int  `json:"localEndpoints"`
	ServiceProxyHealthy bool `json:"serviceProxyHealthy"`
}

// SetHealthy says whether the node's node ports are programmed.
func (h *HealthServers) SetHealthy(ok bool) { h.broken.Store(!ok) }

// Sync serves exactly checks: it listens on the ports not served yet,
// closes those no longer wanted, and updates what the others answer. A
// port it cannot listen on (another process has it) is reported and tried
// again at the next Sync.
func (h *HealthServers) Sync(checks []HealthCheck) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.servers == nil {
		h.servers = map[uint16]*healthServer{}
	}
	want := map[uint16]bool{}
	var errs []error
	for _, hc := range checks {
		want[hc.Port] = true
		if s, ok := h.servers[hc.Port]; ok {
			s.state.Store(&hc)
			continue
		}
		s, err := h.start(hc)
		if err != nil {
			errs = append(errs, fmt.Errorf("health check port %d of %s/%s: %w", hc.Port, hc.Namespace, hc.Name, err))
			continue
		}
		h.servers[hc.Port] = s
	}
	for port, s := range h.servers {
		if !want[port] {
			_ = s.srv.Close()
			delete(h.servers, port)
		}
	}
	return errors.Join(errs...)
}

// Ports are the health check ports served now.
func (h *HealthServers) Ports() []uint16 {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []uint16
	for p := range h.servers {
		out = append(out, p)
	}
	return out
}

// Close stops every server.
func (h *HealthServers) Close() {
	_ = h.Sync(nil)
}

func (h *HealthServers) start(hc HealthCheck) (*healthServer, error) {
	listen := h.Listen
	if listen == nil {
		listen = func(port uint16) (net.Listener, error) { return net.Listen("tcp", ":"+strconv.Itoa(int(port))) }
	}
	ln, err := listen(hc.Port)
	if err != nil {
		return nil, err
	}
	s := &healthServer{owner: h}
	s.state.Store(&hc)
	s.srv = &http.Server{Handler: s, ReadHeaderTimeout: 5 * time.Second, IdleTimeout: 30 * time.Second}
	go func() { _ = s.srv.Serve(ln) }()
	return s, nil
}

// ServeHTTP answers any path: 200 when the node has a ready endpoint of
// the Service and its node ports are programmed, 503 otherwise.
func (s *healthServer) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	hc := s.state.Load()
	var b healthBody
	b.Service.Namespace, b.Service.Name = hc.Namespace, hc.Name
	b.LocalEndpoints, b.ServiceProxyHealthy = hc.LocalEndpoints, !s.owner.broken.Load()
	code := http.StatusOK
	if b.LocalEndpoints == 0 || !b.ServiceProxyHealthy {
		code = http.StatusServiceUnavailable
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(b)
}
