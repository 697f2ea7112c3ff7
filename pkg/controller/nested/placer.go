package nested

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"net"

	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	kuryrv1 "github.com/kuryr-k8s/kuryr/api/v1"
	"github.com/kuryr-k8s/kuryr/pkg/neutron"
)

// Placer puts pods' ports on their node's VM port, in their node's mode.
type Placer struct {
	Modes   *Modes
	Parents *Parents
	Trunks  *Trunks
	Pairs   *Pairs
}

// NewPlacer is a Placer with all its parts over one Neutron client and one
// reader of Nodes: def is [kubernetes] pod_vif_driver, subnets
// [pod_vif_nested] worker_nodes_subnets, attempts its rev_update_attempts.
// The controller and kubectl kuryr doctor build theirs alike.
func NewPlacer(n *neutron.Client, nodes client.Reader, def string, subnets []string, attempts int) *Placer {
	return &Placer{Modes: &Modes{Nodes: nodes, Default: def}, Parents: &Parents{Neutron: n, Nodes: nodes, Subnets: subnets},
		Trunks: &Trunks{Neutron: n}, Pairs: &Pairs{Neutron: n, Attempts: attempts}}
}

// Where is how a node's pods are plugged.
type Where struct {
	// Mode is the node's: neutron-vif (a hypervisor), nested-vlan or
	// nested-macvlan.
	Mode string
	// NetworkID and SubnetID (nested-macvlan) are the VM port's: a
	// macvlan's frames leave untagged on the VM port's network, so its
	// pods' ports must be there (OVN then binds each as a virtual port of
	// the VM's).
	NetworkID, SubnetID string
}

// OnVM says whether the node is a VM node.
func (w Where) OnVM() bool { return w.Mode == ModeVLAN || w.Mode == ModeMacvlan }

// Mode is node's mode (its label, else the default).
func (p *Placer) Mode(ctx context.Context, node string) (string, error) { return p.Modes.Of(ctx, node) }

// Where says how node's pods are plugged.
func (p *Placer) Where(ctx context.Context, node string) (Where, error) {
	mode, err := p.Modes.Of(ctx, node)
	if err != nil || mode != ModeMacvlan {
		return Where{Mode: mode}, err
	}
	parent, err := p.Parents.Of(ctx, node, false)
	if err != nil {
		return Where{}, err
	}
	return Where{Mode: mode, NetworkID: parent.NetworkID, SubnetID: parent.SubnetID}, nil
}

// Place attaches the ports of pods on node to the node's VM port and says
// where each sits (by port id).
func (p *Placer) Place(ctx context.Context, node string, pods []neutron.Port) (map[string]kuryrv1.NestedVIF, error) {
	mode, err := p.Modes.Of(ctx, node)
	if err != nil {
		return nil, err
	}
	parent, err := p.Parents.Of(ctx, node, mode == ModeVLAN)
	if err != nil {
		return nil, err
	}
	out := map[string]kuryrv1.NestedVIF{}
	switch mode {
	case ModeVLAN:
		var ids []string
		for _, port := range pods {
			ids = append(ids, port.ID)
		}
		vlans, err := p.Trunks.Attach(ctx, parent.TrunkID, ids)
		if err != nil {
			p.forgetIfGone(node, err)
			return nil, err
		}
		for _, port := range pods {
			out[port.ID] = kuryrv1.NestedVIF{Mode: kuryrv1.NestedVLAN, ParentPortID: parent.PortID,
				TrunkID: parent.TrunkID, VLANID: vlans[port.ID]}
		}
	case ModeMacvlan:
		var pairs []ports.AddressPair
		for _, port := range pods {
			for _, ip := range port.FixedIPs {
				pairs = append(pairs, ports.AddressPair{IPAddress: ip.IPAddress, MACAddress: MacvlanMAC(port.ID)})
			}
			out[port.ID] = kuryrv1.NestedVIF{Mode: kuryrv1.NestedMacvlan, ParentPortID: parent.PortID}
		}
		if err := p.Pairs.Add(ctx, parent.PortID, pairs); err != nil {
			p.forgetIfGone(node, err)
			return nil, err
		}
	default:
		return nil, fmt.Errorf("node %s is not a VM node (mode %s)", node, mode)
	}
	return out, nil
}

// Unplace takes a pod's port off its VM port: where the KuryrPort recorded
// it, else on its node's. A subport not recorded needs nothing here
// (deleting its port detaches it); nor does a node whose mode or VM port
// is not known (gone, its label invalid): a pair then stays until the
// VM port goes.
func (p *Placer) Unplace(ctx context.Context, node string, at *kuryrv1.NestedVIF, port neutron.Port) error {
	if at == nil {
		mode, err := p.Modes.Of(ctx, node)
		if err != nil || mode == ModeVLAN {
			log.FromContext(ctx).Info("nothing recorded to take off the node's VM port", "node", node,
				"port", port.ID, "mode", mode, "reason", fmt.Sprint(err))
			return nil
		}
		parent, err := p.Parents.Of(ctx, node, false)
		if apierrors.IsNotFound(err) || errors.Is(err, ErrNoParent) {
			log.FromContext(ctx).Info("the node's VM port is not known: nothing to take off it", "node", node,
				"port", port.ID, "reason", err.Error())
			return nil
		}
		if err != nil {
			return err
		}
		at = &kuryrv1.NestedVIF{Mode: kuryrv1.NestedMacvlan, ParentPortID: parent.PortID}
	}
	switch at.Mode {
	case kuryrv1.NestedVLAN:
		return p.Trunks.Detach(ctx, at.TrunkID, []string{port.ID})
	case kuryrv1.NestedMacvlan:
		var pairs []ports.AddressPair
		for _, ip := range port.FixedIPs {
			pairs = append(pairs, ports.AddressPair{IPAddress: ip.IPAddress, MACAddress: MacvlanMAC(port.ID)})
		}
		err := p.Pairs.Remove(ctx, at.ParentPortID, pairs)
		if neutron.IsNotFound(err) {
			return nil // the VM's port is gone, and its pairs with it
		}
		return err
	}
	return fmt.Errorf("unknown nested mode %q", at.Mode)
}

// forgetIfGone drops a node's remembered port after Neutron said its port
// or trunk does not exist (the VM was rebuilt): the retry looks again.
func (p *Placer) forgetIfGone(node string, err error) {
	if neutron.IsNotFound(err) {
		p.Parents.Forget(node)
	}
}

// MacvlanMAC is the MAC of a nested-macvlan pod's interface: one derived
// from its port's id (locally administered, unicast, first octet 0a: kuryr's
// range, then 40 bits of the id's hash), not the port's own. ML2/OVN makes
// the pod's port a virtual port of the VM's, and OVN never delivers to a
// virtual port's own MAC (it expects the virtual address to answer with
// another): with the port's MAC, replies to the pod were routed to the
// virtual port and dropped on the VM's hypervisor. With another MAC,
// allowed on the VM's port, they go to the VM's port. Pure.
func MacvlanMAC(portID string) string {
	sum := sha256.Sum256([]byte(portID))
	return net.HardwareAddr(append([]byte{macvlanOctet}, sum[:5]...)).String()
}

// macvlanOctet marks kuryr's macvlan MACs (locally administered, unicast),
// so that the sweep tells kuryr's pairs on a VM port from others.
const macvlanOctet = 0x0a

// IsMacvlanMAC says whether mac is in kuryr's macvlan range. Pure.
func IsMacvlanMAC(mac string) bool {
	hw, err := net.ParseMAC(mac)
	return err == nil && len(hw) == 6 && hw[0] == macvlanOctet
}
