package plug

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"time"

	current "github.com/containernetworking/cni/pkg/types/100"
	"github.com/containernetworking/plugins/pkg/ns"
	"github.com/mdlayher/arp"
	"github.com/mdlayher/ethernet"
)

// ErrNotAnnounced: the pod's interface works, but its addresses could not
// be announced (see announce); the caller reports it and goes on.
var ErrNotAnnounced = errors.New("the pod's addresses were not announced (gratuitous ARP)")

// announceAfter are when announce sends its gratuitous ARPs, from the
// interface's start: the first at once, the others in case the first came
// before the cloud's switch admitted the address (the pair just written to
// the VM's port is programmed asynchronously), as arping -U repeats.
var announceAfter = []time.Duration{0, time.Second, 3 * time.Second}

// announce sends gratuitous ARPs (requests for its own IPv4 addresses, to
// everyone) from a nested-macvlan pod's new interface, through a packet
// socket opened in the pod's namespace: a router that learnt one of the
// addresses with another MAC takes the new one. A nested-macvlan pod's
// address is learnt behind its VM's port (OVN's MAC_Binding, never aged on
// Neutron's routers, which update an entry they hold from a gratuitous
// ARP), and a deleted pod's MAC stays there until then: a new pod given the
// same address would be unreachable from other networks. The first is sent
// before it returns, the others later (announceAfter); a failure of those
// is not reported (the pod may be gone). Errors wrap ErrNotAnnounced.
func announce(netnsPath, ifName string, res *current.Result) error {
	var ips []netip.Addr
	for _, ipc := range res.IPs {
		if ip, ok := netip.AddrFromSlice(ipc.Address.IP.To4()); ok {
			ips = append(ips, ip)
		}
	}
	if len(ips) == 0 {
		return nil // IPv6: neighbour advertisements are not sent (ndisc_notify); not covered
	}
	var c *arp.Client
	var hw net.HardwareAddr
	err := ns.WithNetNSPath(netnsPath, func(ns.NetNS) error {
		ifi, err := net.InterfaceByName(ifName)
		if err != nil {
			return err
		}
		hw = ifi.HardwareAddr
		c, err = arp.Dial(ifi) // a packet socket: CAP_NET_RAW
		return err
	})
	if err != nil {
		return fmt.Errorf("%w: %s: %v", ErrNotAnnounced, ifName, err)
	}
	var packets []*arp.Packet
	for _, ip := range ips {
		p, err := arp.NewPacket(arp.OperationRequest, hw, ip, make(net.HardwareAddr, len(hw)), ip)
		if err != nil {
			c.Close()
			return fmt.Errorf("%w: %s on %s: %v", ErrNotAnnounced, ip, ifName, err)
		}
		packets = append(packets, p)
	}
	send := func() error {
		for _, p := range packets {
			if err := c.WriteTo(p, ethernet.Broadcast); err != nil {
				return err
			}
		}
		return nil
	}
	if err := send(); err != nil {
		c.Close()
		return fmt.Errorf("%w: %s: %v", ErrNotAnnounced, ifName, err)
	}
	start := time.Now()
	go func() {
		defer c.Close()
		for _, at := range announceAfter[1:] {
			<-time.After(time.Until(start.Add(at)))
			if send() != nil {
				return
			}
		}
	}()
	return nil
}
