package plug

import (
	"errors"
	"fmt"
	"net"
	"syscall"

	"github.com/containernetworking/plugins/pkg/ns"
	"github.com/vishvananda/netlink"

	"github.com/kuryr-k8s/kuryr/pkg/names"
)

// CreateNested gives a pod of a VM node its interface on the VM's NIC: a
// VLAN interface with the subport's id (VLANID > 0) or a macvlan in bridge
// mode, made under a temporary name in the node's namespace, moved into
// the pod's, renamed, given the port's MAC, MTU, addresses and routes; a
// macvlan's addresses are announced then (announce: an ErrNotAnnounced
// leaves the working interface in place). A leftover of an earlier attempt
// is removed first; on another failure nothing is left. A VLAN id still
// held by an interface on the NIC (a namespace the runtime has not torn
// down) is ErrInUse.
func (k Kernel) CreateNested(n Nested) error {
	parent, err := netlink.LinkByName(n.Link)
	if err != nil {
		return fmt.Errorf("the VM's NIC %s: %w", n.Link, err)
	}
	if n.MTU > parent.Attrs().MTU {
		return fmt.Errorf("the pod network's MTU %d is above the MTU %d of the VM's NIC %s: "+
			"lower the network's MTU or set [neutron_defaults] network_device_mtu", n.MTU, parent.Attrs().MTU, n.Link)
	}
	if l, err := netlink.LinkByName(n.TempName); err == nil {
		if err := netlink.LinkDel(l); err != nil {
			return fmt.Errorf("remove stale %s: %w", n.TempName, err)
		}
	}
	if err := removeIn(n.Netns, n.IfName); err != nil {
		return err
	}
	link, err := nestedLink(n, parent)
	if err != nil {
		return err
	}
	if err := netlink.LinkAdd(link); err != nil {
		if n.VLANID > 0 && errors.Is(err, syscall.EEXIST) {
			return fmt.Errorf("%w: VLAN %d on %s", ErrInUse, n.VLANID, n.Link)
		}
		return fmt.Errorf("create %s on %s: %w", n.TempName, n.Link, err)
	}
	if err := k.moveIn(n); err != nil {
		if l, lerr := netlink.LinkByName(n.TempName); lerr == nil {
			_ = netlink.LinkDel(l)
		}
		_ = removeIn(n.Netns, n.IfName)
		if n.VLANID == 0 && errors.Is(err, syscall.EADDRINUSE) {
			return fmt.Errorf("%w: MAC %s on %s: %v", ErrInUse, n.MAC, n.Link, err)
		}
		return err
	}
	if n.VLANID > 0 {
		return nil // a subport's address is its OVN port's: no router learns it
	}
	return announce(n.Netns, n.IfName, n.Result)
}

// ErrInUse: another interface on the NIC has the VLAN id, or the macvlan
// MAC (an older sandbox's namespace still holds it).
var ErrInUse = errors.New("in use on the VM's NIC")

func nestedLink(n Nested, parent netlink.Link) (netlink.Link, error) {
	mac, err := net.ParseMAC(n.MAC)
	if err != nil {
		return nil, fmt.Errorf("MAC %q: %w", n.MAC, err)
	}
	attrs := netlink.NewLinkAttrs()
	attrs.Name, attrs.ParentIndex, attrs.MTU, attrs.HardwareAddr = n.TempName, parent.Attrs().Index, n.MTU, mac
	if n.VLANID > 0 {
		return &netlink.Vlan{LinkAttrs: attrs, VlanId: n.VLANID, VlanProtocol: netlink.VLAN_PROTOCOL_8021Q}, nil
	}
	return &netlink.Macvlan{LinkAttrs: attrs, Mode: netlink.MACVLAN_MODE_BRIDGE}, nil
}

// moveIn moves the new interface into the pod's namespace, names and
// configures it there.
func (Kernel) moveIn(n Nested) error {
	pod, err := ns.GetNS(n.Netns)
	if err != nil {
		return fmt.Errorf("pod netns %s: %w", n.Netns, err)
	}
	defer pod.Close()
	l, err := netlink.LinkByName(n.TempName)
	if err != nil {
		return fmt.Errorf("find %s: %w", n.TempName, err)
	}
	if err := netlink.LinkSetNsFd(l, int(pod.Fd())); err != nil {
		return fmt.Errorf("move %s into %s: %w", n.TempName, n.Netns, err)
	}
	return pod.Do(func(ns.NetNS) error {
		l, err := netlink.LinkByName(n.TempName)
		if err != nil {
			return fmt.Errorf("find %s in the pod: %w", n.TempName, err)
		}
		if err := netlink.LinkSetName(l, n.IfName); err != nil {
			return fmt.Errorf("rename %s to %s: %w", n.TempName, n.IfName, err)
		}
		if err := netlink.LinkSetUp(l); err != nil {
			return fmt.Errorf("set %s up: %w", n.IfName, err)
		}
		return configurePodEnd(Veth{IfName: n.IfName, Result: n.Result, TxChecksumOff: n.TxChecksumOff})
	})
}

// removeIn deletes ifName from a pod namespace that may be gone already.
func removeIn(netnsPath, ifName string) error {
	err := ns.WithNetNSPath(netnsPath, func(ns.NetNS) error {
		l, err := netlink.LinkByName(ifName)
		if err != nil {
			return nil
		}
		return netlink.LinkDel(l)
	})
	var gone ns.NSPathNotExistErr
	if errors.As(err, &gone) {
		return nil
	}
	return err
}

// DefaultRouteLink is the interface of the calling namespace's IPv4
// default route: a VM's NIC when [binding] link_iface is not set.
func (Kernel) DefaultRouteLink() (string, error) {
	routes, err := netlink.RouteList(nil, netlink.FAMILY_V4)
	if err != nil {
		return "", fmt.Errorf("list routes: %w", err)
	}
	for _, r := range routes {
		if ones, _ := maskOf(r.Dst); ones == 0 && r.LinkIndex > 0 {
			l, err := netlink.LinkByIndex(r.LinkIndex)
			if err != nil {
				return "", fmt.Errorf("default route's interface: %w", err)
			}
			return l.Attrs().Name, nil
		}
	}
	return "", errors.New("no IPv4 default route: set [binding] link_iface to the VM's NIC")
}

// maskOf is a route destination's prefix length (0 for the default).
func maskOf(dst *net.IPNet) (int, int) {
	if dst == nil {
		return 0, 32
	}
	return dst.Mask.Size()
}

// RouteViaShim makes the node reach a macvlan pod on its own NIC: a NIC
// cannot reach its own macvlans, so the node gets one of its own
// (names.MacvlanShim, bridge mode, no address) and a host route to the
// pod's address through it, from the NIC's first IPv4 address (the
// pod answers through the cloud). Idempotent.
func (Kernel) RouteViaShim(link string, podIP net.IP) error {
	shim, err := ensureShim(link)
	if err != nil {
		return err
	}
	src, err := firstIPv4(link)
	if err != nil {
		return err
	}
	r := &netlink.Route{LinkIndex: shim.Attrs().Index, Dst: hostNet(podIP), Src: src, Scope: netlink.SCOPE_LINK}
	if err := netlink.RouteReplace(r); err != nil {
		return fmt.Errorf("route %s via %s: %w", podIP, names.MacvlanShim, err)
	}
	return nil
}

// UnrouteViaShim removes the route RouteViaShim made (none is no error).
func (Kernel) UnrouteViaShim(podIP net.IP) error {
	shim, err := netlink.LinkByName(names.MacvlanShim)
	if err != nil {
		return nil
	}
	err = netlink.RouteDel(&netlink.Route{LinkIndex: shim.Attrs().Index, Dst: hostNet(podIP), Scope: netlink.SCOPE_LINK})
	if err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("remove route to %s via %s: %w", podIP, names.MacvlanShim, err)
	}
	return nil
}

// ShimRouted says whether the node routes podIP through its shim.
func (Kernel) ShimRouted(podIP net.IP) (bool, error) {
	shim, err := netlink.LinkByName(names.MacvlanShim)
	var missing netlink.LinkNotFoundError
	if errors.As(err, &missing) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("find %s: %w", names.MacvlanShim, err)
	}
	routes, err := netlink.RouteListFiltered(netlink.FAMILY_ALL,
		&netlink.Route{LinkIndex: shim.Attrs().Index, Dst: hostNet(podIP)}, netlink.RT_FILTER_OIF|netlink.RT_FILTER_DST)
	if err != nil {
		return false, fmt.Errorf("list routes via %s: %w", names.MacvlanShim, err)
	}
	return len(routes) > 0, nil
}

func ensureShim(link string) (netlink.Link, error) {
	if l, err := netlink.LinkByName(names.MacvlanShim); err == nil {
		// Up whatever happened before (a crash between add and up).
		return l, netlink.LinkSetUp(l)
	}
	parent, err := netlink.LinkByName(link)
	if err != nil {
		return nil, fmt.Errorf("the VM's NIC %s: %w", link, err)
	}
	attrs := netlink.NewLinkAttrs()
	attrs.Name, attrs.ParentIndex = names.MacvlanShim, parent.Attrs().Index
	if err := netlink.LinkAdd(&netlink.Macvlan{LinkAttrs: attrs, Mode: netlink.MACVLAN_MODE_BRIDGE}); err != nil && !errors.Is(err, syscall.EEXIST) {
		return nil, fmt.Errorf("create %s on %s: %w", names.MacvlanShim, link, err)
	}
	l, err := netlink.LinkByName(names.MacvlanShim)
	if err != nil {
		return nil, err
	}
	return l, netlink.LinkSetUp(l)
}

func firstIPv4(link string) (net.IP, error) {
	l, err := netlink.LinkByName(link)
	if err != nil {
		return nil, err
	}
	addrs, err := netlink.AddrList(l, netlink.FAMILY_V4)
	if err != nil || len(addrs) == 0 {
		return nil, fmt.Errorf("the VM's NIC %s has no IPv4 address (%v)", link, err)
	}
	return addrs[0].IP, nil
}

func hostNet(ip net.IP) *net.IPNet {
	if v4 := ip.To4(); v4 != nil {
		return &net.IPNet{IP: v4, Mask: net.CIDRMask(32, 32)}
	}
	return &net.IPNet{IP: ip, Mask: net.CIDRMask(128, 128)}
}
