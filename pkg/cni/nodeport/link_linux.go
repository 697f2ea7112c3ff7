package nodeport

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/vishvananda/netlink"

	"github.com/kuryr-k8s/kuryr/pkg/cni/plug"
)

// Linux configures the management interface with netlink, in the calling
// process's network namespace (the node's).
type Linux struct{}

// Configure gives the interface the plan's MAC, MTU, addresses and routes,
// removes addresses and routes through gateways the plan does not have,
// and brings it up. Idempotent.
func (Linux) Configure(name string, p *Plan, txChecksumOff bool) error {
	l, err := netlink.LinkByName(name)
	if err != nil {
		return fmt.Errorf("find %s: %w", name, err)
	}
	if !bytes.Equal(l.Attrs().HardwareAddr, p.MAC) {
		if err := netlink.LinkSetHardwareAddr(l, p.MAC); err != nil {
			return fmt.Errorf("set MAC of %s: %w", name, err)
		}
	}
	if p.MTU > 0 && l.Attrs().MTU != p.MTU {
		if err := netlink.LinkSetMTU(l, p.MTU); err != nil {
			return fmt.Errorf("set MTU of %s: %w", name, err)
		}
	}
	p, left, err := withoutOverlaps(l, p)
	if err != nil {
		return err
	}
	if err := syncAddrs(l, p); err != nil {
		return err
	}
	if err := netlink.LinkSetUp(l); err != nil {
		return fmt.Errorf("bring %s up: %w", name, err)
	}
	if err := syncRoutes(l, p); err != nil {
		return err
	}
	if txChecksumOff {
		if err := plug.TxChecksumOff(name); err != nil {
			return err
		}
	}
	if len(left) > 0 {
		return &RoutesLeftOut{Routes: left}
	}
	return nil
}

// RoutesLeftOut: the interface is configured, but for routes that would
// have taken over the node's own networks.
type RoutesLeftOut struct{ Routes []string }

func (e *RoutesLeftOut) Error() string {
	return "routes left out, as they would cover the node's own addresses: " + strings.Join(e.Routes, ", ")
}

// withoutOverlaps refuses a plan whose addresses would take over the
// node's own networks (an address of another of its interfaces), and
// leaves out the routes that would.
func withoutOverlaps(mgmt netlink.Link, p *Plan) (*Plan, []string, error) {
	addrs, err := netlink.AddrList(nil, netlink.FAMILY_ALL)
	if err != nil {
		return nil, nil, fmt.Errorf("list the node's addresses: %w", err)
	}
	kept := *p
	kept.Routes = nil
	var left []string
	for _, r := range p.Routes {
		if ip := coveredAddr(mgmt, addrs, r.Dst); ip != nil {
			left = append(left, fmt.Sprintf("%s (holds %s)", r.Dst, ip))
			continue
		}
		kept.Routes = append(kept.Routes, r)
	}
	for _, mine := range p.Addrs {
		if ip := coveredAddr(mgmt, addrs, &net.IPNet{IP: mine.IP.Mask(mine.Mask), Mask: mine.Mask}); ip != nil {
			return nil, nil, fmt.Errorf("address %s would cover the node's own address %s", mine, ip)
		}
	}
	return &kept, left, nil
}

// coveredAddr is an address of the node's, on another interface than
// mgmt, that n holds (nil: none).
func coveredAddr(mgmt netlink.Link, addrs []netlink.Addr, n *net.IPNet) net.IP {
	for _, a := range addrs {
		if a.LinkIndex == mgmt.Attrs().Index || a.IP.IsLoopback() || a.IP.IsLinkLocalUnicast() {
			continue
		}
		if n.Contains(a.IP) {
			return a.IP
		}
	}
	return nil
}

func syncAddrs(l netlink.Link, p *Plan) error {
	have, err := netlink.AddrList(l, netlink.FAMILY_ALL)
	if err != nil {
		return fmt.Errorf("list addresses of %s: %w", l.Attrs().Name, err)
	}
	want := map[string]bool{}
	for _, a := range p.Addrs {
		want[a.String()] = true
	}
	for _, a := range have {
		if !want[a.IPNet.String()] && !a.IP.IsLinkLocalUnicast() {
			if err := netlink.AddrDel(l, &a); err != nil {
				return fmt.Errorf("remove %s from %s: %w", a.IPNet, l.Attrs().Name, err)
			}
		}
	}
	for _, a := range p.Addrs {
		if err := netlink.AddrReplace(l, &netlink.Addr{IPNet: a}); err != nil {
			return fmt.Errorf("add %s to %s: %w", a, l.Attrs().Name, err)
		}
	}
	return nil
}

func syncRoutes(l netlink.Link, p *Plan) error {
	have, err := netlink.RouteList(l, netlink.FAMILY_ALL)
	if err != nil {
		return fmt.Errorf("list routes of %s: %w", l.Attrs().Name, err)
	}
	want := map[string]bool{}
	for _, r := range p.Routes {
		want[r.Dst.String()+" via "+r.Gw.String()] = true
	}
	for _, r := range have {
		if r.Gw != nil && r.Dst != nil && !want[r.Dst.String()+" via "+r.Gw.String()] {
			if err := netlink.RouteDel(&r); err != nil {
				return fmt.Errorf("remove route %s via %s: %w", r.Dst, r.Gw, err)
			}
		}
	}
	for _, r := range p.Routes {
		if err := netlink.RouteReplace(&netlink.Route{LinkIndex: l.Attrs().Index, Dst: r.Dst, Gw: r.Gw}); err != nil {
			return fmt.Errorf("route %s via %s: %w", r.Dst, r.Gw, err)
		}
	}
	return nil
}

// Exists reports whether the interface is there (ovs-vswitchd creates it,
// and recreates it when it restarts).
func (Linux) Exists(name string) bool {
	_, err := netlink.LinkByName(name)
	return err == nil
}

// Watch calls changed whenever the interface appears, changes or goes, until
// ctx ends: ovs-vswitchd recreates internal interfaces blank when it
// restarts.
func (Linux) Watch(ctx context.Context, name string, changed func()) error {
	updates := make(chan netlink.LinkUpdate, 16)
	done := make(chan struct{})
	if err := netlink.LinkSubscribe(updates, done); err != nil {
		return fmt.Errorf("subscribe to link updates: %w", err)
	}
	go func() {
		defer close(done)
		for {
			select {
			case <-ctx.Done():
				return
			case u, ok := <-updates:
				if !ok {
					return
				}
				if u.Attrs().Name == name {
					changed()
				}
			}
		}
	}()
	return nil
}

// waitLink polls for the interface to appear.
func waitLink(ctx context.Context, exists func(string) bool, name string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for !exists(name) {
		if time.Now().After(deadline) {
			return fmt.Errorf("%s did not appear within %s (is ovs-vswitchd running?)", name, timeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
	return nil
}
