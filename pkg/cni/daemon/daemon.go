// Package daemon is kuryr-daemon's CNI server: it answers the requests
// kuryr-cni forwards, plugging pods into the Neutron ports the controller
// created for them (read from this node's KuryrPorts).
package daemon

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"time"

	"github.com/containernetworking/cni/pkg/types"

	"github.com/kuryr-k8s/kuryr/pkg/cni/api"
	"github.com/kuryr-k8s/kuryr/pkg/cni/plug"
)

// ovsAPI is the OVS seam.
type ovsAPI interface {
	AddPort(ctx context.Context, p plug.Port) error
	DelPort(ctx context.Context, name string) error
	Ports(ctx context.Context) ([]plug.Port, error)
	WaitInstalled(ctx context.Context, name string, timeout time.Duration) error
}

// kernelAPI is the netlink seam.
type kernelAPI interface {
	CreateVeth(v plug.Veth) error
	DeleteVeth(hostIf string)
	RemovePodIf(netns, ifName string) error
	Inspect(netns, ifName string, gw net.IP) (plug.Observed, error)
}

// Linux is the real kernel.
type Linux struct{}

// CreateVeth implements kernelAPI.
func (Linux) CreateVeth(v plug.Veth) error { return plug.CreateVeth(v) }

// DeleteVeth implements kernelAPI.
func (Linux) DeleteVeth(hostIf string) { plug.DeleteVeth(hostIf) }

// RemovePodIf implements kernelAPI.
func (Linux) RemovePodIf(netns, ifName string) error { return plug.RemovePodIf(netns, ifName) }

// Inspect implements kernelAPI.
func (Linux) Inspect(netns, ifName string, gw net.IP) (plug.Observed, error) {
	return plug.Inspect(netns, ifName, gw)
}

// Usable says how ADD knows a plugged port carries traffic.
type Usable string

// Ways to know a port is usable.
const (
	// UsableOVNInstalled: ovn-controller set ovn-installed on the interface
	// (local, ≈20 ms after the plug).
	UsableOVNInstalled Usable = "ovn-installed"
	// UsableNeutronActive: the controller saw Neutron report the port ACTIVE.
	UsableNeutronActive Usable = "neutron-active"
	// UsableImmediately: do not wait.
	UsableImmediately Usable = "none"
)

// Daemon serves CNI requests for one node.
type Daemon struct {
	Registry *Registry
	OVS      ovsAPI
	Kernel   kernelAPI
	// Bridge is used when the port's binding names none.
	Bridge string
	// PortTimeout bounds the wait for the controller's port data,
	// UsableTimeout the wait for the port to carry traffic.
	PortTimeout, UsableTimeout time.Duration
	Usable                     Usable
	TxChecksumOff              bool
	// MarkActive, when set, records on the KuryrPort that the port carries
	// traffic (called once ovn-installed is seen).
	MarkActive func(ctx context.Context, ns, name string) error
	// Ready reports whether ADDs can be served (STATUS).
	Ready func() error

	locks keyedLocks
}

// podArgs are the Kubernetes facts the runtime passes in CNI_ARGS.
type podArgs struct {
	types.CommonArgs
	K8S_POD_NAMESPACE          types.UnmarshallableString //nolint:revive // CNI_ARGS names
	K8S_POD_NAME               types.UnmarshallableString //nolint:revive
	K8S_POD_UID                types.UnmarshallableString //nolint:revive
	K8S_POD_INFRA_CONTAINER_ID types.UnmarshallableString //nolint:revive
}

func parsePodArgs(req *api.Request, need bool) (podArgs, *types.Error) {
	var a podArgs
	if err := types.LoadArgs(req.Args, &a); err != nil {
		return a, types.NewError(types.ErrInvalidEnvironmentVariables, "invalid CNI_ARGS", err.Error())
	}
	if need && (a.K8S_POD_NAMESPACE == "" || a.K8S_POD_NAME == "") {
		return a, types.NewError(types.ErrInvalidEnvironmentVariables, "CNI_ARGS lacks K8S_POD_NAMESPACE or K8S_POD_NAME", req.Args)
	}
	return a, nil
}

// cniVersion is the version the runtime asked for in its configuration.
func cniVersion(config []byte) (string, *types.Error) {
	var c types.PluginConf
	if err := json.Unmarshal(config, &c); err != nil {
		return "", types.NewError(types.ErrDecodingFailure, "invalid network configuration", err.Error())
	}
	if c.CNIVersion == "" {
		return "", types.NewError(types.ErrInvalidNetworkConfig, "network configuration has no cniVersion", "")
	}
	return c.CNIVersion, nil
}

func internal(what string, err error) *types.Error {
	return types.NewError(types.ErrInternal, what, err.Error())
}

func tryAgain(format string, args ...any) *types.Error {
	return types.NewError(types.ErrTryAgainLater, fmt.Sprintf(format, args...), "")
}
