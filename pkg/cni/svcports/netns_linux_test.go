package svcports

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/containernetworking/plugins/pkg/ns"
	"github.com/containernetworking/plugins/pkg/testutils"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// These tests program nftables in throwaway network namespaces of their
// own (root): never in the host's.
//
//	client 10.77.1.2 ── 10.77.1.1 node 10.77.2.1 ── 10.77.2.2 backend
//	                    (forwards)                  + 10.77.96.10, .11 on lo
//	(and fd77:1::2 ── fd77:1::1, fd77:2::1 ── fd77:2::2 + fd77:96::10)
//
// The backend has no route back to the client: like a pod, whose replies
// go through the OVN router and not the node, it can answer node-port
// traffic only once the node has masqueraded it.
type testNet struct {
	client, node, backend ns.NetNS
}

func needRoot(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("netns tests need root (CI and the local cloud run as root)")
	}
}

func newNS(t *testing.T) ns.NetNS {
	t.Helper()
	n, err := testutils.NewNS()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = n.Close(); _ = testutils.UnmountNS(n) })
	return n
}

func newTestNet(t *testing.T) *testNet {
	t.Helper()
	n := &testNet{client: newNS(t), node: newNS(t), backend: newNS(t)}
	do(t, n.node, func() error {
		if err := veth("n-c", "c0", n.client, "10.77.1.1/24", "fd77:1::1/64"); err != nil {
			return err
		}
		if err := veth("n-b", "b0", n.backend, "10.77.2.1/24", "fd77:2::1/64"); err != nil {
			return err
		}
		if err := routes("10.77.96.0/24 via 10.77.2.2", "fd77:96::/64 via fd77:2::2"); err != nil {
			return err
		}
		if err := os.WriteFile("/proc/sys/net/ipv4/ip_forward", []byte("1"), 0o644); err != nil {
			return err
		}
		return os.WriteFile("/proc/sys/net/ipv6/conf/all/forwarding", []byte("1"), 0o644)
	})
	do(t, n.client, func() error {
		if err := up("c0", "10.77.1.2/24", "fd77:1::2/64"); err != nil {
			return err
		}
		return routes("0.0.0.0/0 via 10.77.1.1", "::/0 via fd77:1::1")
	})
	do(t, n.backend, func() error {
		if err := up("b0", "10.77.2.2/24", "fd77:2::2/64"); err != nil {
			return err
		}
		return up("lo", "10.77.96.10/32", "10.77.96.11/32", "fd77:96::10/128")
	})
	// Until the kernel has activated a new link (linkwatch, which may wait
	// up to a second after a burst of link events), it drops what it sends.
	for netns, links := range map[ns.NetNS][]string{n.client: {"c0"}, n.node: {"n-c", "n-b"}, n.backend: {"b0"}} {
		do(t, netns, func() error { return waitOperUp(links...) })
	}
	return n
}

func waitOperUp(links ...string) error {
	deadline := time.Now().Add(5 * time.Second)
	for _, name := range links {
		for {
			l, err := netlink.LinkByName(name)
			if err != nil {
				return err
			}
			if l.Attrs().OperState == netlink.OperUp {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("%s is still %s", name, l.Attrs().OperState)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	return nil
}

func do(t *testing.T, n ns.NetNS, f func() error) {
	t.Helper()
	if err := n.Do(func(ns.NetNS) error { return f() }); err != nil {
		t.Fatal(err)
	}
}

// veth creates name (with addrs, up) in the current namespace and its
// peer in other.
func veth(name, peer string, other ns.NetNS, addrs ...string) error {
	if err := netlink.LinkAdd(&netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: name}, PeerName: peer,
		PeerNamespace: netlink.NsFd(int(other.Fd()))}); err != nil {
		return fmt.Errorf("veth %s: %w", name, err)
	}
	return up(name, addrs...)
}

// up gives link its addresses (without duplicate address detection, which
// would hold IPv6 ones back for a second) and brings it up.
func up(link string, addrs ...string) error {
	l, err := netlink.LinkByName(link)
	if err != nil {
		return err
	}
	for _, a := range addrs {
		addr, err := netlink.ParseAddr(a)
		if err != nil {
			return err
		}
		addr.Flags = unix.IFA_F_NODAD
		if err := netlink.AddrAdd(l, addr); err != nil {
			return fmt.Errorf("%s on %s: %w", a, link, err)
		}
	}
	return netlink.LinkSetUp(l)
}

// routes adds routes written "<destination> via <gateway>".
func routes(rs ...string) error {
	for _, r := range rs {
		dst, gw, _ := strings.Cut(r, " via ")
		_, d, err := net.ParseCIDR(dst)
		if err != nil {
			return err
		}
		if err := netlink.RouteAdd(&netlink.Route{Dst: d, Gw: net.ParseIP(gw)}); err != nil {
			return fmt.Errorf("route %s: %w", r, err)
		}
	}
	return nil
}

// serve answers, on each address of the backend, "<local> <remote>" to
// every TCP connection and UDP datagram: what the backend saw.
func (n *testNet) serve(t *testing.T, tcp, udp []string) {
	t.Helper()
	do(t, n.backend, func() error {
		for _, a := range tcp {
			ln, err := net.Listen("tcp", a)
			if err != nil {
				return err
			}
			t.Cleanup(func() { _ = ln.Close() })
			go func() {
				for {
					c, err := ln.Accept()
					if err != nil {
						return
					}
					_, _ = fmt.Fprintf(c, "%s %s\n", c.LocalAddr(), c.RemoteAddr())
					_ = c.Close()
				}
			}()
		}
		for _, a := range udp {
			pc, err := net.ListenPacket("udp", a)
			if err != nil {
				return err
			}
			t.Cleanup(func() { _ = pc.Close() })
			go func() {
				buf := make([]byte, 64)
				for {
					_, from, err := pc.ReadFrom(buf)
					if err != nil {
						return
					}
					_, _ = pc.WriteTo(fmt.Appendf(nil, "%s %s\n", pc.LocalAddr(), from), from)
				}
			}()
		}
		return nil
	})
}

// ask sends one request from inside n and returns the answer: the
// backend's "<local> <remote>", "(timeout)" when a TCP connection was not
// answered (dropped), or "" (refused, or no UDP answer).
func ask(t *testing.T, n ns.NetNS, network, addr string) string {
	t.Helper()
	var answer string
	do(t, n, func() error {
		c, err := net.DialTimeout(network, addr, 500*time.Millisecond)
		if ne, ok := err.(net.Error); ok && ne.Timeout() {
			answer = "(timeout)"
			return nil
		} else if err != nil {
			return nil // refused
		}
		defer func() { _ = c.Close() }()
		_ = c.SetDeadline(time.Now().Add(500 * time.Millisecond))
		if network == "udp" {
			if _, err := c.Write([]byte("?")); err != nil {
				return nil
			}
		}
		answer, _ = bufio.NewReader(c).ReadString('\n')
		answer = strings.TrimSpace(answer)
		return nil
	})
	return answer
}
