package plug

import (
	"errors"
	"fmt"
	"net"

	"github.com/containernetworking/plugins/pkg/ip"
	"github.com/containernetworking/plugins/pkg/ipam"
	"github.com/containernetworking/plugins/pkg/ns"
	"github.com/safchain/ethtool"
	"github.com/vishvananda/netlink"
)

// CreateVeth builds the pair, moves the pod end into its namespace and
// configures it, leaving the host end up in the caller's namespace. A stale
// pair from an earlier attempt is replaced; on failure nothing is left.
func (k Kernel) CreateVeth(v Veth) error {
	if l, err := netlink.LinkByName(v.HostIf); err == nil {
		if err := netlink.LinkDel(l); err != nil {
			return fmt.Errorf("remove stale %s: %w", v.HostIf, err)
		}
	}
	hostNS, err := ns.GetCurrentNS()
	if err != nil {
		return fmt.Errorf("current netns: %w", err)
	}
	defer hostNS.Close()
	err = ns.WithNetNSPath(v.Netns, func(ns.NetNS) error {
		if l, err := netlink.LinkByName(v.IfName); err == nil {
			_ = netlink.LinkDel(l)
		}
		if _, _, err := ip.SetupVethWithName(v.IfName, v.HostIf, v.MTU, v.MAC, hostNS); err != nil {
			return fmt.Errorf("create veth %s/%s: %w", v.IfName, v.HostIf, err)
		}
		return configurePodEnd(v)
	})
	if err != nil {
		k.DeleteVeth(v.HostIf)
		return err
	}
	return nil
}

func configurePodEnd(v Veth) error {
	if err := ipam.ConfigureIface(v.IfName, v.Result); err != nil {
		return fmt.Errorf("configure %s: %w", v.IfName, err)
	}
	if lo, err := netlink.LinkByName("lo"); err == nil {
		_ = netlink.LinkSetUp(lo)
	}
	if !v.TxChecksumOff {
		return nil
	}
	return TxChecksumOff(v.IfName)
}

// TxChecksumOff turns tx checksum offload off on an interface of the
// calling thread's namespace: OVS's userspace datapath never completes
// partial checksums, and TCP breaks.
func TxChecksumOff(name string) error {
	e, err := ethtool.NewEthtool()
	if err != nil {
		return fmt.Errorf("ethtool: %w", err)
	}
	defer e.Close()
	if err := e.Change(name, map[string]bool{"tx-checksum-ip-generic": false}); err != nil {
		return fmt.Errorf("disable tx checksum offload on %s: %w", name, err)
	}
	return nil
}

// DeleteVeth removes the host end, and with it the pod end.
func (Kernel) DeleteVeth(hostIf string) {
	if l, err := netlink.LinkByName(hostIf); err == nil {
		_ = netlink.LinkDel(l)
	}
}

// CheckNetns reports whether path is a network namespace.
func (Kernel) CheckNetns(path string) error {
	n, err := ns.GetNS(path)
	if err != nil {
		return err
	}
	return n.Close()
}

// RemovePodIf deletes ifName from a pod namespace that may no longer exist,
// only if it is a veth whose other end, or a VLAN or macvlan interface
// whose NIC, is in the caller's (the node's) namespace: what a plug of
// this node left. A DEL for a sandbox this node
// never plugged must not take another node's pod off the network: runtimes
// on one host can share a CNI cache (libcni's /var/lib/cni), and a GC that
// lists only one node's attachments sends DELs for every other node's
// through this node's plugin.
func (Kernel) RemovePodIf(netnsPath, ifName string) error {
	if netnsPath == "" {
		return nil
	}
	hostNS, err := ns.GetCurrentNS()
	if err != nil {
		return fmt.Errorf("current netns: %w", err)
	}
	defer hostNS.Close()
	err = ns.WithNetNSPath(netnsPath, func(ns.NetNS) error {
		l, err := netlink.LinkByName(ifName)
		var notFound netlink.LinkNotFoundError
		if errors.As(err, &notFound) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("find %s: %w", ifName, err)
		}
		switch l.(type) {
		case *netlink.Veth, *netlink.Vlan, *netlink.Macvlan:
		default:
			return nil
		}
		// The node's namespace as this one numbers it (-1: none of its
		// links has a peer there).
		id, err := netlink.GetNetNsIdByFd(int(hostNS.Fd()))
		if err != nil {
			return fmt.Errorf("the node's netns id in %s: %w", netnsPath, err)
		}
		if id < 0 || l.Attrs().NetNsID != id {
			return nil
		}
		return netlink.LinkDel(l)
	})
	var nsErr ns.NSPathNotExistErr
	if errors.As(err, &nsErr) {
		return nil
	}
	return err
}

// Inspect reads ifName in a pod namespace, for CHECK.
func (Kernel) Inspect(netnsPath, ifName string, gateway net.IP) (Observed, error) {
	var o Observed
	err := ns.WithNetNSPath(netnsPath, func(ns.NetNS) error {
		l, err := netlink.LinkByName(ifName)
		if err != nil {
			return nil
		}
		o.Exists, o.MAC, o.Kind = true, l.Attrs().HardwareAddr.String(), l.Type()
		if v, ok := l.(*netlink.Vlan); ok {
			o.VLANID = v.VlanId
		}
		addrs, err := netlink.AddrList(l, netlink.FAMILY_ALL)
		if err != nil {
			return err
		}
		for _, a := range addrs {
			o.Addrs = append(o.Addrs, a.IPNet.String())
		}
		routes, err := netlink.RouteList(l, netlink.FAMILY_ALL)
		if err != nil {
			return err
		}
		for _, r := range routes {
			o.HasGW = o.HasGW || (gateway != nil && r.Gw.Equal(gateway))
		}
		return nil
	})
	return o, err
}
