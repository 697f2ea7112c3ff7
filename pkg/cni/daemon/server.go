package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/containernetworking/cni/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/kuryr-k8s/kuryr/pkg/cni/api"
)

// Bounds on what a client of the socket may send: a request is a CNI
// invocation of a few kilobytes (a GC's list of valid attachments is the
// largest), and kuryr-cni sends it at once.
const MaxRequestBytes = 1 << 20

// ReadTimeout bounds how long a client may take to send its request.
var ReadTimeout = 10 * time.Second

// NewServer serves POST api.Path on the daemon's socket and nothing else,
// with bounded request sizes and read times. Answers are not bounded in
// time: an ADD may wait minutes for its port.
func NewServer(ctx context.Context, d *Daemon) *http.Server {
	mux := http.NewServeMux()
	mux.Handle("POST "+api.Path, d)
	return &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: ReadTimeout,
		ReadTimeout:       ReadTimeout,
		IdleTimeout:       time.Minute,
		MaxHeaderBytes:    16 << 10,
		BaseContext:       func(net.Listener) context.Context { return ctx },
	}
}

// DecodeRequest reads one request from kuryr-cni, at most MaxRequestBytes.
func DecodeRequest(r io.Reader) (*api.Request, *types.Error) {
	var req api.Request
	dec := json.NewDecoder(io.LimitReader(r, MaxRequestBytes+1))
	if err := dec.Decode(&req); err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return nil, types.NewError(types.ErrDecodingFailure, "request too large", fmt.Sprintf("over %d bytes", MaxRequestBytes))
		}
		return nil, types.NewError(types.ErrDecodingFailure, "invalid request from kuryr-cni", err.Error())
	}
	if dec.InputOffset() > MaxRequestBytes {
		return nil, types.NewError(types.ErrDecodingFailure, "request too large", fmt.Sprintf("over %d bytes", MaxRequestBytes))
	}
	return &req, nil
}

// ServeHTTP decodes a request from kuryr-cni and answers it.
func (d *Daemon) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	var resp api.Response
	req, cerr := DecodeRequest(http.MaxBytesReader(w, r.Body, MaxRequestBytes))
	if cerr != nil {
		resp.Error = cerr
		req = &api.Request{Command: "invalid"}
	} else {
		resp.Result, resp.Error = d.Handle(r.Context(), req)
	}
	outcome, status := "ok", http.StatusOK
	if resp.Error != nil {
		outcome, status = fmt.Sprint(resp.Error.Code), http.StatusInternalServerError
		log.FromContext(r.Context()).Info("CNI request failed", "command", req.Command, "container", req.ContainerID,
			"args", req.Args, "code", resp.Error.Code, "msg", resp.Error.Msg, "details", resp.Error.Details)
	}
	requestSeconds.WithLabelValues(commandLabel(req.Command), outcome).Observe(time.Since(start).Seconds())
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(resp)
}

// commandLabel keeps the metric's label values bounded whatever clients send.
func commandLabel(c string) string {
	switch c {
	case "ADD", "DEL", "CHECK", "GC", "STATUS":
		return c
	}
	return "invalid"
}

// DrainTimeout bounds how long a stopping daemon lets the requests under
// way finish. A rolling update starts the next daemon only once this one
// has gone, and kuryr-cni waits up to 60 s for it: the two together stay
// under that. answerGrace is what the requests still running then get to
// answer "try again".
var (
	DrainTimeout = 25 * time.Second
	answerGrace  = 3 * time.Second
)

// ErrStopping is the cause with which a stopping daemon cuts short the
// requests still running after DrainTimeout.
var ErrStopping = errors.New("kuryr-daemon is stopping")

// Drain stops srv gracefully: the socket goes at once (kuryr-cni waits for
// the next daemon), and the requests under way finish, for DrainTimeout at
// most. Their context (NewServer's) must outlive the signal to stop: stop
// cancels it, after the drain, or when it runs out of time, so that the
// requests still running answer "try again" before the process exits.
func Drain(ctx context.Context, srv *http.Server, stop context.CancelCauseFunc) {
	logger := log.FromContext(ctx)
	logger.Info("stopping: draining CNI requests under way", "timeout", DrainTimeout.String())
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), DrainTimeout)
	defer cancel()
	err := srv.Shutdown(dctx)
	stop(ErrStopping)
	if err == nil {
		return
	}
	logger.Info("CNI requests still running after the drain: cutting them short", "error", err.Error())
	actx, acancel := context.WithTimeout(context.WithoutCancel(ctx), answerGrace)
	defer acancel()
	if err := srv.Shutdown(actx); err != nil {
		logger.Info("CNI requests unanswered at exit", "error", err.Error())
	}
}

// Listen opens the root-only unix socket kuryr-cni connects to. Closing it
// removes the socket only if it is still this one: a daemon that stops
// never removes the socket of the one that replaced it.
func Listen(socket string) (net.Listener, error) {
	if err := os.MkdirAll(filepath.Dir(socket), 0o700); err != nil {
		return nil, fmt.Errorf("socket directory: %w", err)
	}
	_ = os.Remove(socket)
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: socket, Net: "unix"})
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", socket, err)
	}
	l.SetUnlinkOnClose(false)
	info, err := os.Stat(socket)
	if err == nil {
		err = os.Chmod(socket, 0o600)
	}
	if err != nil {
		l.Close()
		_ = os.Remove(socket)
		return nil, fmt.Errorf("restrict %s: %w", socket, err)
	}
	return &socketListener{UnixListener: l, path: socket, info: info}, nil
}

// socketListener removes its socket file on Close if it is still its own.
type socketListener struct {
	*net.UnixListener
	path string
	info os.FileInfo
}

func (l *socketListener) Close() error {
	err := l.UnixListener.Close()
	if cur, serr := os.Stat(l.path); serr == nil && os.SameFile(cur, l.info) {
		_ = os.Remove(l.path)
	}
	return err
}
