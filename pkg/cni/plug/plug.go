// Package plug wires a pod's interface on the node's kernel side: a veth
// pair whose host end becomes an OVS port of the integration bridge (see
// package ovs) and whose pod end has the Neutron port's MAC, addresses and
// routes; on a VM node, a VLAN or macvlan interface of the VM's NIC with
// the same.
package plug

import (
	current "github.com/containernetworking/cni/pkg/types/100"
)

// Kernel is the node's kernel: it builds, inspects and removes the veth
// pairs of pods (Linux only: its methods are in veth_linux.go). It holds no
// state; its zero value is ready to use.
type Kernel struct{}

// Veth is the pod side of an attachment.
type Veth struct {
	Netns  string // the pod's network namespace path
	IfName string // name in the pod, e.g. eth0
	HostIf string // name on the node, e.g. tap0123456789a
	MAC    string
	MTU    int
	// Result holds the addresses and routes to configure; its interface
	// index 1 must be IfName.
	Result *current.Result
	// TxChecksumOff disables tx checksum offload in the pod: with OVS's
	// userspace datapath nothing completes partial checksums, and TCP
	// breaks.
	TxChecksumOff bool
}

// Nested is a pod's interface on the NIC of a VM node (nested modes).
type Nested struct {
	Netns  string // the pod's network namespace path
	IfName string // name in the pod, e.g. eth0
	// TempName is its name in the node's namespace before the move
	// (HostIfName of the port).
	TempName string
	Link     string // the VM's NIC
	// VLANID > 0: a VLAN interface with that id (nested-vlan); 0: a
	// macvlan (nested-macvlan).
	VLANID int
	MAC    string
	MTU    int
	// Result holds the addresses and routes to configure.
	Result        *current.Result
	TxChecksumOff bool
}

// Observed is what the pod end looks like.
type Observed struct {
	MAC    string
	Addrs  []string // CIDR
	HasGW  bool
	Exists bool
	// Kind is the interface's link type (veth, vlan, macvlan); VLANID a
	// VLAN interface's id.
	Kind   string
	VLANID int
}
