// Package daemon is kuryr-daemon's CNI server: it answers the requests
// kuryr-cni forwards, plugging pods into the Neutron ports the controller
// created for them (read from this node's KuryrPorts). It writes nothing to
// Kubernetes, and trusts of a KuryrPort only what it cannot derive itself:
// the port's id, MAC, addresses and routes, each checked; the host
// interface's name comes from the port id and the bridge from its own
// configuration.
package daemon

import (
	"context"
	"fmt"
	"net"
	"time"

	"github.com/containernetworking/cni/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/kuryr-k8s/kuryr/pkg/cni/api"
	"github.com/kuryr-k8s/kuryr/pkg/cni/plug"
	"github.com/kuryr-k8s/kuryr/pkg/keyedlock"
	"github.com/kuryr-k8s/kuryr/pkg/ovs"
)

// ovsAPI is where attachments are plugged and recorded: *ovs.Client on a
// hypervisor node, *records.Dir on a VM node (nested modes).
type ovsAPI interface {
	AddPort(ctx context.Context, p ovs.Port) error
	DelPort(ctx context.Context, name string) error
	Ports(ctx context.Context) ([]ovs.Port, error)
	WaitInstalled(ctx context.Context, name string, timeout time.Duration) error
}

// kernelAPI is the netlink seam: plug.Kernel on a node.
type kernelAPI interface {
	CheckNetns(path string) error
	CreateVeth(v plug.Veth) error
	DeleteVeth(hostIf string)
	CreateNested(n plug.Nested) error
	RouteViaShim(link string, podIP net.IP) error
	// ShimRouted: the node routes podIP through its shim (CHECK).
	ShimRouted(podIP net.IP) (bool, error)
	UnrouteViaShim(podIP net.IP) error
	RemovePodIf(netns, ifName string) error
	Inspect(netns, ifName string, gw net.IP) (plug.Observed, error)
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
	// Bridge is the integration bridge pods are plugged into.
	Bridge string
	// Link, on a VM node (nested modes), is the VM's NIC pods' VLAN and
	// macvlan interfaces are made on; empty on a hypervisor node.
	Link string
	// PortTimeout bounds the wait for the controller's port data,
	// UsableTimeout the wait for the port to carry traffic.
	PortTimeout, UsableTimeout time.Duration
	Usable                     Usable
	TxChecksumOff              bool
	// Ready reports whether ADDs can be served (STATUS).
	Ready func() error

	locks keyedlock.Locks
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

func internal(what string, err error) *types.Error {
	return types.NewError(types.ErrInternal, what, err.Error())
}

func tryAgain(format string, args ...any) *types.Error {
	return types.NewError(types.ErrTryAgainLater, fmt.Sprintf(format, args...), "")
}
