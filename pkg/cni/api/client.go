package api

// The client side of the protocol: what kuryr-cni does with a CNI request.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/containernetworking/cni/pkg/skel"
	"github.com/containernetworking/cni/pkg/types"
)

// Forward sends the CNI command the runtime invoked kuryr-cni with (its
// arguments a, configuration on a.StdinData) to the node's kuryr-daemon and
// writes the daemon's result, if any, to stdout. Every failure is a CNI
// error (*types.Error): a daemon that cannot be reached is "try again
// later".
func Forward(command string, a *skel.CmdArgs, stdout io.Writer) error {
	var conf NetConf
	if err := json.Unmarshal(a.StdinData, &conf); err != nil {
		return types.NewError(types.ErrDecodingFailure, "invalid network configuration", err.Error())
	}
	out, err := Call(conf, Request{
		Command: command, ContainerID: a.ContainerID, Netns: a.Netns,
		IfName: a.IfName, Args: a.Args, Path: a.Path, Config: a.StdinData,
	})
	if err != nil {
		return err
	}
	if len(out) > 0 {
		_, werr := stdout.Write(out)
		return werr
	}
	return nil
}

// defaultTimeout stays below the kubelet's and containerd's 4 minutes, so
// the runtime gets a real error rather than its own timeout.
const defaultTimeout = 220 * time.Second

// restartWait bounds how long a request waits for a daemon that is not
// listening: one being restarted (a rolling update of its DaemonSet) is
// back within seconds, and the pod then starts without a failed attempt.
const restartWait = 60 * time.Second

// waitFor is how long a command waits for a restarting daemon: ADD, DEL
// and CHECK wait (the pod's start or teardown would otherwise fail once);
// STATUS and GC answer at once (a runtime polls STATUS and wants "not
// available" now). The wait counts against the request's timeout, which
// stays below the kubelet's.
func waitFor(command string) time.Duration {
	switch command {
	case "ADD", "DEL", "CHECK":
		return restartWait
	}
	return 0
}

// dialDaemon connects to the daemon's socket, retrying for up to wait
// while nothing listens on it: refused, or missing from a directory that
// exists (a missing directory is a wrong configuration, failed at once).
func dialDaemon(ctx context.Context, socket string, wait time.Duration) (net.Conn, error) {
	deadline := time.Now().Add(wait)
	for {
		conn, err := (&net.Dialer{}).DialContext(ctx, "unix", socket)
		if err == nil || !restarting(socket, err) || time.Now().After(deadline) {
			return conn, err
		}
		select {
		case <-ctx.Done():
			return nil, err
		case <-time.After(250 * time.Millisecond):
		}
	}
}

func restarting(socket string, err error) bool {
	if errors.Is(err, syscall.ECONNREFUSED) {
		return true
	}
	_, statErr := os.Stat(filepath.Dir(socket))
	return errors.Is(err, syscall.ENOENT) && statErr == nil
}

// Call sends req to the daemon conf names (its socket, DefaultSocket
// unless configured) and returns the daemon's result. It waits for a
// daemon being restarted as waitFor says, within the request's timeout
// (conf's, else defaultTimeout). Errors are CNI errors (*types.Error).
func Call(conf NetConf, req Request) ([]byte, error) {
	socket, timeout := conf.DaemonSocket, defaultTimeout
	if socket == "" {
		socket = DefaultSocket
	}
	if conf.TimeoutSeconds > 0 {
		timeout = time.Duration(conf.TimeoutSeconds) * time.Second
	}
	body, _ := json.Marshal(req)
	c := http.Client{Timeout: timeout, Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return dialDaemon(ctx, socket, waitFor(req.Command))
		},
	}}
	resp, err := c.Post("http://kuryr-daemon"+Path, "application/json", bytes.NewReader(body))
	if err != nil {
		return nil, types.NewError(types.ErrTryAgainLater, "kuryr-daemon unreachable", fmt.Sprintf("%s: %v", socket, err))
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, types.NewError(types.ErrTryAgainLater, "reading kuryr-daemon's answer", err.Error())
	}
	var r Response
	if err := json.Unmarshal(raw, &r); err != nil {
		return nil, types.NewError(types.ErrInternal, "invalid answer from kuryr-daemon", fmt.Sprintf("HTTP %d: %.200s", resp.StatusCode, raw))
	}
	if r.Error != nil {
		return nil, r.Error
	}
	return r.Result, nil
}
