package refuse

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"runtime"
	"sync"

	"github.com/containernetworking/plugins/pkg/ns"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	"github.com/kuryr-k8s/kuryr/pkg/cni/plug"
)

// podIf is the refuse port's interface inside its namespace.
const podIf = "eth0"

// addrGenModeNone is the kernel's IN6_ADDR_GEN_MODE_NONE (linux/if_link.h):
// no IPv6 link-local address made from the MAC.
const addrGenModeNone = 1

// Linux keeps the refuse namespace (made by this process on first use,
// held open while it runs: no bind mount, nothing to clean up after a
// crash) and plugs the port into it with a veth pair.
type Linux struct {
	mu sync.Mutex
	ns ns.NetNS
}

// namespace returns the refuse namespace, making it the first time.
func (l *Linux) namespace() (ns.NetNS, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.ns != nil {
		return l.ns, nil
	}
	n, err := newNamespace()
	if err != nil {
		return nil, err
	}
	l.ns = n
	return n, nil
}

// newNamespace makes a network namespace without entering it for good:
// netns.New switches the calling thread, so a goroutine of its own does
// it, locked to its thread; if that thread cannot be switched back, the
// goroutine ends still locked and the runtime retires the thread.
func newNamespace() (ns.NetNS, error) {
	type result struct {
		n   ns.NetNS
		err error
	}
	done := make(chan result, 1)
	go func() {
		runtime.LockOSThread()
		orig, err := netns.Get()
		if err != nil {
			done <- result{err: fmt.Errorf("current netns: %w", err)}
			return
		}
		defer orig.Close()
		h, err := netns.New()
		if err != nil {
			done <- result{err: fmt.Errorf("new netns: %w", err)}
			return
		}
		defer h.Close()
		if err := netns.Set(orig); err != nil {
			done <- result{err: fmt.Errorf("back to the node's netns: %w", err)}
			return
		}
		n, err := ns.GetNS(fmt.Sprintf("/proc/%d/fd/%d", unix.Getpid(), int(h)))
		runtime.UnlockOSThread()
		if err != nil {
			err = fmt.Errorf("open the refuse netns: %w", err)
		}
		done <- result{n, err}
	}()
	r := <-done
	return r.n, r.err
}

// Plug makes (or checks) the veth pair, the host end up in the caller's
// namespace, the other in the refuse namespace with the plan's answer MAC, MTU
// and addresses, a default route through the gateway, and the refused
// prefixes local; created says the pair is new. Idempotent.
func (l *Linux) Plug(p *Plan, txChecksumOff bool) (created bool, err error) {
	n, err := l.namespace()
	if err != nil {
		return false, err
	}
	if !isPlugged(n, p) {
		if err := l.Unplug(p.HostIf()); err != nil {
			return false, err
		}
		veth := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: p.HostIf(), MTU: p.MTU}, PeerName: podIf,
			PeerHardwareAddr: p.Answer, PeerMTU: uint32(p.MTU), PeerNamespace: netlink.NsFd(int(n.Fd()))}
		if err := netlink.LinkAdd(veth); err != nil {
			return false, fmt.Errorf("create veth %s: %w", p.HostIf(), err)
		}
		created = true
	}
	host, err := netlink.LinkByName(p.HostIf())
	if err != nil {
		return created, fmt.Errorf("find %s: %w", p.HostIf(), err)
	}
	if err := netlink.LinkSetUp(host); err != nil {
		return created, fmt.Errorf("bring %s up: %w", p.HostIf(), err)
	}
	return created, n.Do(func(ns.NetNS) error { return configure(p, txChecksumOff) })
}

// isPlugged reports whether the pair exists with the answer MAC inside.
func isPlugged(n ns.NetNS, p *Plan) bool {
	if _, err := netlink.LinkByName(p.HostIf()); err != nil {
		return false
	}
	ok := false
	_ = n.Do(func(ns.NetNS) error {
		l, err := netlink.LinkByName(podIf)
		ok = err == nil && bytes.Equal(l.Attrs().HardwareAddr, p.Answer)
		return nil
	})
	return ok
}

// Unplug removes the host end, and with it the other.
func (l *Linux) Unplug(hostIf string) error {
	link, err := netlink.LinkByName(hostIf)
	var notFound netlink.LinkNotFoundError
	if errors.As(err, &notFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("find %s: %w", hostIf, err)
	}
	if err := netlink.LinkDel(link); err != nil {
		return fmt.Errorf("remove %s: %w", hostIf, err)
	}
	return nil
}

// configure runs inside the refuse namespace.
func configure(p *Plan, txChecksumOff bool) error {
	if lo, err := netlink.LinkByName("lo"); err == nil {
		if err := netlink.LinkSetUp(lo); err != nil {
			return fmt.Errorf("bring lo up: %w", err)
		}
	}
	l, err := netlink.LinkByName(podIf)
	if err != nil {
		return fmt.Errorf("find %s: %w", podIf, err)
	}
	if err := syncAddrs(l, p.Addrs); err != nil {
		return err
	}
	if err := ipv6Off(l, p.Addrs); err != nil {
		return err
	}
	if err := netlink.LinkSetUp(l); err != nil {
		return fmt.Errorf("bring %s up: %w", podIf, err)
	}
	if err := netlink.RouteReplace(&netlink.Route{LinkIndex: l.Attrs().Index, Gw: p.Gateway}); err != nil {
		return fmt.Errorf("default route via %s: %w", p.Gateway, err)
	}
	if err := syncLocal(p.Refuse); err != nil {
		return err
	}
	if txChecksumOff {
		return plug.TxChecksumOff(podIf)
	}
	return nil
}

// syncAddrs gives l exactly the port's addresses (besides link-local
// ones): a port replaced by another that answers with the same MAC keeps
// its pair, and the gone port's address, which Neutron may give another
// port, must not stay.
func syncAddrs(l netlink.Link, want []*net.IPNet) error {
	have, err := netlink.AddrList(l, netlink.FAMILY_ALL)
	if err != nil {
		return fmt.Errorf("list addresses of %s: %w", podIf, err)
	}
	keep := map[string]bool{}
	for _, a := range want {
		keep[a.String()] = true
	}
	for _, a := range have {
		if !keep[a.IPNet.String()] && !a.IP.IsLinkLocalUnicast() {
			if err := netlink.AddrDel(l, &a); err != nil {
				return fmt.Errorf("remove %s: %w", a.IPNet, err)
			}
		}
	}
	for _, a := range want {
		if err := netlink.AddrReplace(l, &netlink.Addr{IPNet: a}); err != nil {
			return fmt.Errorf("add %s: %w", a, err)
		}
	}
	return nil
}

// ipv6Off keeps the interface of a port without an IPv6 address from
// making itself an IPv6 link-local address (addrgenmode none, before it is
// up; /proc/sys is read-only in the daemon's pod): every node's refuse
// interface has the same answer MAC, hence would have the same link-local
// address (a duplicate on every node but one), and its router
// solicitations and multicast reports would teach the switch that MAC on
// one node's port.
func ipv6Off(l netlink.Link, addrs []*net.IPNet) error {
	for _, a := range addrs {
		if a.IP.To4() == nil {
			return nil
		}
	}
	err := netlink.LinkSetIP6AddrGenMode(l, addrGenModeNone)
	if err != nil && !errors.Is(err, unix.EAFNOSUPPORT) && !errors.Is(err, unix.EOPNOTSUPP) { // no IPv6 in this kernel
		return fmt.Errorf("IPv6 address generation off on %s: %w", podIf, err)
	}
	return nil
}

// syncLocal makes exactly the refused prefixes local (routes of type local
// on lo in the local table, as `ip route add local PREFIX dev lo`): the
// kernel then answers ARP for them, and resets or refuses what arrives,
// as nothing listens here.
func syncLocal(refuse []*net.IPNet) error {
	lo, err := netlink.LinkByName("lo")
	if err != nil {
		return fmt.Errorf("find lo: %w", err)
	}
	want := map[string]bool{}
	for _, n := range refuse {
		want[n.String()] = true
	}
	have, err := netlink.RouteListFiltered(netlink.FAMILY_ALL,
		&netlink.Route{Table: unix.RT_TABLE_LOCAL, LinkIndex: lo.Attrs().Index}, netlink.RT_FILTER_TABLE|netlink.RT_FILTER_OIF)
	if err != nil {
		return fmt.Errorf("list local routes: %w", err)
	}
	for _, r := range have {
		if r.Type == unix.RTN_LOCAL && r.Dst != nil && !r.Dst.IP.IsLoopback() && !want[r.Dst.String()] {
			if err := netlink.RouteDel(&r); err != nil {
				return fmt.Errorf("remove local route %s: %w", r.Dst, err)
			}
		}
	}
	for _, n := range refuse {
		r := &netlink.Route{LinkIndex: lo.Attrs().Index, Dst: n, Table: unix.RT_TABLE_LOCAL, Type: unix.RTN_LOCAL,
			Scope: unix.RT_SCOPE_HOST}
		if err := netlink.RouteReplace(r); err != nil {
			return fmt.Errorf("local route %s: %w", n, err)
		}
	}
	return nil
}
