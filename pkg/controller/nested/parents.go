// Package nested places the pods of Kubernetes nodes that are VMs of the
// cloud on their VM's port, as the original's nested drivers did:
// nested-vlan makes each pod's port a subport of the VM's trunk with a
// VLAN id of its own (the node's kuryr-daemon gives the pod a VLAN
// interface of the VM's NIC), nested-macvlan makes the pod's address and
// MAC an allowed address pair of the VM's port (the pod gets a macvlan
// interface). Neutron holds all the state: the trunk's subports are the
// VLAN ids in use, the port's pairs the pods it carries; kuryr reads them
// before every change, under a lock per trunk or port, so a restarted
// controller reuses nothing and a concurrent one is refused by Neutron
// (DuplicateSubPort, If-Match) rather than overwriting.
package nested

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kuryr-k8s/kuryr/pkg/neutron"
)

// Modes, as [kubernetes] pod_vif_driver names them.
const (
	ModeVLAN    = "nested-vlan"
	ModeMacvlan = "nested-macvlan"
)

// parentAPI finds VMs' ports.
type parentAPI interface {
	ParentPorts(ctx context.Context, ip string, subnets []string) ([]neutron.ParentPort, error)
}

// Parent is a VM node's port, with the network and subnet of the node's
// address on it.
type Parent struct {
	Node, Address, PortID, TrunkID string
	NetworkID, SubnetID            string
}

// Parents finds the VM port of a node from the node's addresses on
// [pod_vif_nested] worker_nodes_subnets, and remembers it while the node
// keeps its address.
type Parents struct {
	Neutron parentAPI
	Nodes   client.Reader
	// Subnets are worker_nodes_subnets; empty: any subnet.
	Subnets []string

	mu    sync.Mutex
	known map[string]Parent // by node name
}

// Of returns node's VM port; needTrunk (nested-vlan): it must be the
// parent of a trunk.
func (p *Parents) Of(ctx context.Context, node string, needTrunk bool) (Parent, error) {
	var n corev1.Node
	if err := p.Nodes.Get(ctx, client.ObjectKey{Name: node}, &n); err != nil {
		return Parent{}, fmt.Errorf("read node %s: %w", node, err)
	}
	addrs := nodeAddresses(&n)
	p.mu.Lock()
	known, ok := p.known[node]
	p.mu.Unlock()
	if ok && slices.Contains(addrs, known.Address) && (known.TrunkID != "" || !needTrunk) {
		return known, nil
	}
	for _, a := range addrs {
		ports, err := p.Neutron.ParentPorts(ctx, a, p.Subnets)
		if err != nil {
			return Parent{}, err
		}
		switch {
		case len(ports) == 0:
			continue
		case len(ports) > 1:
			return Parent{}, fmt.Errorf("node %s: %d ports hold its address %s on the worker nodes subnets %v; "+
				"which one is the VM's is not clear", node, len(ports), a, p.Subnets)
		case needTrunk && ports[0].TrunkID == "":
			return Parent{}, fmt.Errorf("node %s: its port %s (%s) is not the parent of a trunk; nested-vlan needs "+
				"one (openstack network trunk create --parent-port %s ...)", node, ports[0].ID, a, ports[0].ID)
		}
		found := Parent{Node: node, Address: a, PortID: ports[0].ID, TrunkID: ports[0].TrunkID, NetworkID: ports[0].NetworkID}
		for _, ip := range ports[0].FixedIPs {
			if ip.IPAddress == a {
				found.SubnetID = ip.SubnetID
			}
		}
		p.mu.Lock()
		if p.known == nil {
			p.known = map[string]Parent{}
		}
		p.known[node] = found
		p.mu.Unlock()
		return found, nil
	}
	return Parent{}, fmt.Errorf("node %s: %w: none holds any of its addresses %v on the worker nodes subnets %v "+
		"([pod_vif_nested] worker_nodes_subnets)", node, ErrNoParent, addrs, p.Subnets)
}

// ErrNoParent: no Neutron port is the node's (the VM or its port is gone,
// or its address changed).
var ErrNoParent = errors.New("no VM port")

// Forget drops what is known of node (its port or trunk went away).
func (p *Parents) Forget(node string) {
	p.mu.Lock()
	delete(p.known, node)
	p.mu.Unlock()
}

// nodeAddresses are a node's InternalIPs, then its other IP addresses.
func nodeAddresses(n *corev1.Node) []string {
	var internal, other []string
	for _, a := range n.Status.Addresses {
		switch a.Type {
		case corev1.NodeInternalIP:
			internal = append(internal, a.Address)
		case corev1.NodeExternalIP:
			other = append(other, a.Address)
		}
	}
	return append(internal, other...)
}
