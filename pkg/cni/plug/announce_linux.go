package plug

import (
	"fmt"
	"net"
	"net/netip"

	current "github.com/containernetworking/cni/pkg/types/100"
	"github.com/mdlayher/arp"
	"github.com/mdlayher/ethernet"
)

// announce sends gratuitous ARPs (requests for its own addresses, to
// everyone) from a nested-macvlan pod's new interface, in the calling thread's
// namespace: a router that learnt one of the addresses with another MAC
// takes the new one. A nested-macvlan pod's address is learnt behind its
// VM's port (OVN's MAC_Binding, never aged on Neutron's routers, which
// update an entry they hold from a gratuitous ARP), and a deleted pod's
// MAC stays there until then: a new pod given the same address would be
// unreachable from other networks. Two of each, as one may be lost.
func announce(ifName string, res *current.Result) error {
	ifi, err := net.InterfaceByName(ifName)
	if err != nil {
		return fmt.Errorf("announce %s: %w", ifName, err)
	}
	c, err := arp.Dial(ifi)
	if err != nil {
		return fmt.Errorf("announce %s (a packet socket: CAP_NET_RAW): %w", ifName, err)
	}
	defer c.Close()
	for _, ipc := range res.IPs {
		ip, ok := netip.AddrFromSlice(ipc.Address.IP.To4())
		if !ok {
			continue // IPv6 announces itself (unsolicited neighbour advertisements with DAD)
		}
		p, err := arp.NewPacket(arp.OperationRequest, ifi.HardwareAddr, ip, make(net.HardwareAddr, len(ifi.HardwareAddr)), ip)
		if err != nil {
			return fmt.Errorf("announce %s on %s: %w", ip, ifName, err)
		}
		for range 2 {
			if err := c.WriteTo(p, ethernet.Broadcast); err != nil {
				return fmt.Errorf("announce %s on %s: %w", ip, ifName, err)
			}
		}
	}
	return nil
}
