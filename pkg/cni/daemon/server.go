package daemon

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/containernetworking/cni/pkg/types"
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/kuryr-k8s/kuryr/pkg/cni/api"
)

var (
	requestSeconds = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "kuryr_cni_request_duration_seconds",
		Help:    "CNI requests served by the daemon, by command and outcome.",
		Buckets: prometheus.ExponentialBuckets(0.005, 2, 16),
	}, []string{"command", "result"})
	addStageSeconds = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "kuryr_cni_add_stage_seconds",
		Help: "CNI ADD time by stage: wait_port (controller's port data), plug, wait_usable, and plug_and_usable (the two together).",
		// Factor 1.5 from 1 ms to 128 s: fine enough to tell 0.9 s from
		// 1.1 s, the plug + usable target.
		Buckets: prometheus.ExponentialBuckets(0.001, 1.5, 30),
	}, []string{"stage"})
)

// MustRegister adds the daemon's metrics to a registry.
func MustRegister(r prometheus.Registerer) { r.MustRegister(requestSeconds, addStageSeconds) }

func observeAdd(waitPort, plugTime, waitUsable time.Duration) {
	addStageSeconds.WithLabelValues("wait_port").Observe(waitPort.Seconds())
	addStageSeconds.WithLabelValues("plug").Observe(plugTime.Seconds())
	addStageSeconds.WithLabelValues("wait_usable").Observe(waitUsable.Seconds())
	addStageSeconds.WithLabelValues("plug_and_usable").Observe((plugTime + waitUsable).Seconds())
}

// Handle serves one CNI request.
func (d *Daemon) Handle(ctx context.Context, req *api.Request) ([]byte, *types.Error) {
	ctx, cancel := context.WithTimeout(ctx, d.PortTimeout+d.UsableTimeout+30*time.Second)
	defer cancel()
	ctx = log.IntoContext(ctx, log.FromContext(ctx).WithValues("command", req.Command))
	switch req.Command {
	case "ADD":
		return d.add(ctx, req)
	case "DEL":
		return nil, d.del(ctx, req)
	case "CHECK":
		return nil, d.check(ctx, req)
	case "GC":
		return nil, d.gc(ctx, req)
	case "STATUS":
		if err := d.Ready(); err != nil {
			return nil, types.NewError(api.ErrNotReady, "kuryr-daemon cannot serve ADDs yet", err.Error())
		}
		return nil, nil
	}
	return nil, types.NewError(types.ErrInvalidEnvironmentVariables, fmt.Sprintf("unknown CNI_COMMAND %q", req.Command), "")
}

// ServeHTTP decodes a request from kuryr-cni and answers it.
func (d *Daemon) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var req api.Request
	var resp api.Response
	start := time.Now()
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		resp.Error = types.NewError(types.ErrDecodingFailure, "invalid request from kuryr-cni", err.Error())
	} else {
		resp.Result, resp.Error = d.Handle(r.Context(), &req)
	}
	outcome, status := "ok", http.StatusOK
	if resp.Error != nil {
		outcome, status = fmt.Sprint(resp.Error.Code), http.StatusInternalServerError
		log.FromContext(r.Context()).Info("CNI request failed", "command", req.Command, "container", req.ContainerID,
			"args", req.Args, "code", resp.Error.Code, "msg", resp.Error.Msg, "details", resp.Error.Details)
	}
	requestSeconds.WithLabelValues(req.Command, outcome).Observe(time.Since(start).Seconds())
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(resp)
}

// Listen opens the root-only unix socket kuryr-cni connects to.
func Listen(socket string) (net.Listener, error) {
	if err := os.MkdirAll(filepath.Dir(socket), 0o700); err != nil {
		return nil, fmt.Errorf("socket directory: %w", err)
	}
	_ = os.Remove(socket)
	l, err := net.Listen("unix", socket)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", socket, err)
	}
	if err := os.Chmod(socket, 0o600); err != nil {
		l.Close()
		return nil, fmt.Errorf("restrict %s: %w", socket, err)
	}
	return l, nil
}
