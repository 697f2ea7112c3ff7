// Package api is the protocol between kuryr-cni (the binary the container
// runtime executes) and kuryr-daemon (one per node): the CNI request as the
// runtime gave it, over HTTP on a root-only unix socket, and the daemon's
// answer, which kuryr-cni prints unchanged.
package api

import (
	"github.com/containernetworking/cni/pkg/types"
)

// Path is the one endpoint of the daemon's CNI server.
const Path = "/v1/cni"

// DefaultSocket is where the daemon listens unless configured otherwise.
const DefaultSocket = "/run/kuryr/cni.sock"

// Request is one CNI invocation.
type Request struct {
	Command     string `json:"command"` // ADD, DEL, CHECK, GC, STATUS
	ContainerID string `json:"containerId"`
	Netns       string `json:"netns"`
	IfName      string `json:"ifName"`
	// Args is CNI_ARGS ("K8S_POD_NAMESPACE=..;K8S_POD_NAME=..").
	Args string `json:"args"`
	Path string `json:"path"`
	// Config is the network configuration the runtime passed on stdin.
	Config []byte `json:"config"`
}

// Response carries either a result (printed as is) or a CNI error.
type Response struct {
	Result []byte       `json:"result,omitempty"`
	Error  *types.Error `json:"error,omitempty"`
}

// NetConf is kuryr's entry in the CNI network configuration list.
type NetConf struct {
	types.PluginConf
	// DaemonSocket overrides DefaultSocket.
	DaemonSocket string `json:"daemon_socket,omitempty"`
	// TimeoutSeconds bounds a request, safely below the kubelet's 4 minutes.
	TimeoutSeconds int `json:"timeout_seconds,omitempty"`
}

// Error codes beyond the CNI spec's well-known ones (types.Err*).
const (
	// ErrNotReady: STATUS when the daemon cannot serve ADDs yet.
	ErrNotReady uint = 50
	// ErrCheckFailed: CHECK found the attachment differs from its port.
	ErrCheckFailed uint = 101
	// ErrPlug: plugging failed (kernel or OVS).
	ErrPlug uint = 102
)
