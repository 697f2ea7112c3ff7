// Command kuryr-cni is the CNI plugin the container runtime executes. It
// holds no logic: it forwards the request to the node's kuryr-daemon over a
// root-only unix socket and prints the daemon's answer. Every failure is a
// CNI error object; a daemon that cannot be reached is "try again later".
package main

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
	"github.com/containernetworking/cni/pkg/version"

	"github.com/kuryr-k8s/kuryr/pkg/cni/api"
)

// defaultTimeout stays below the kubelet's and containerd's 4 minutes, so
// the runtime gets a real error rather than its own timeout.
const defaultTimeout = 220 * time.Second

func main() {
	skel.PluginMainFuncs(skel.CNIFuncs{
		Add:    forward("ADD"),
		Del:    forward("DEL"),
		Check:  forward("CHECK"),
		GC:     forward("GC"),
		Status: forward("STATUS"),
	}, version.All, "kuryr-cni: pods on Neutron ports")
}

func forward(command string) func(*skel.CmdArgs) error {
	return func(a *skel.CmdArgs) error {
		var conf api.NetConf
		if err := json.Unmarshal(a.StdinData, &conf); err != nil {
			return types.NewError(types.ErrDecodingFailure, "invalid network configuration", err.Error())
		}
		out, err := call(conf, api.Request{
			Command: command, ContainerID: a.ContainerID, Netns: a.Netns,
			IfName: a.IfName, Args: a.Args, Path: a.Path, Config: a.StdinData,
		})
		if err != nil {
			return err
		}
		if len(out) > 0 {
			_, werr := os.Stdout.Write(out)
			return werr
		}
		return nil
	}
}

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

func call(conf api.NetConf, req api.Request) ([]byte, error) {
	socket, timeout := conf.DaemonSocket, defaultTimeout
	if socket == "" {
		socket = api.DefaultSocket
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
	resp, err := c.Post("http://kuryr-daemon"+api.Path, "application/json", bytes.NewReader(body))
	if err != nil {
		return nil, types.NewError(types.ErrTryAgainLater, "kuryr-daemon unreachable", fmt.Sprintf("%s: %v", socket, err))
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, types.NewError(types.ErrTryAgainLater, "reading kuryr-daemon's answer", err.Error())
	}
	var r api.Response
	if err := json.Unmarshal(raw, &r); err != nil {
		return nil, types.NewError(types.ErrInternal, "invalid answer from kuryr-daemon", fmt.Sprintf("HTTP %d: %.200s", resp.StatusCode, raw))
	}
	if r.Error != nil {
		return nil, r.Error
	}
	return r.Result, nil
}
