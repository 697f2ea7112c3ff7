package refuse

import (
	"errors"
	"net"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/containernetworking/plugins/pkg/ns"
	"github.com/containernetworking/plugins/pkg/testutils"
	"github.com/vishvananda/netlink"

	kuryrv1 "github.com/kuryr-k8s/kuryr/api/v1"
)

// TestPlugRefuses plugs a refuse port in a throwaway "node" namespace
// whose end of the veth plays the router (the gateway), and checks that a
// TCP connection to a refused address is reset and a UDP datagram gets a
// port unreachable, at once; that plugging again changes nothing; and
// that unplugging removes the pair (root).
func TestPlugRefuses(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("netns tests need root (CI and the local cloud run as root)")
	}
	node, err := testutils.NewNS()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = node.Close(); _ = testutils.UnmountNS(node) })
	np := refusePort("0.0.0.0/0", "10.96.255.254", "10.96.0.0/17")
	np.AnswerMAC = "02:6b:00:00:00:01"
	p, err := NewPlan(np)
	if err != nil {
		t.Fatal(err)
	}
	l := &Linux{}
	t.Cleanup(func() {
		if l.ns != nil {
			_ = l.ns.Close()
		}
	})
	err = node.Do(func(ns.NetNS) error {
		for i, want := range []bool{true, false} {
			created, err := l.Plug(p, true)
			if err != nil {
				return err
			}
			if created != want {
				t.Errorf("plug %d: created %v, want %v", i, created, want)
			}
		}
		host, err := netlink.LinkByName(p.HostIf())
		if err != nil {
			return err
		}
		gw, _ := netlink.ParseAddr("10.96.255.254/16")
		if err := netlink.AddrAdd(host, gw); err != nil {
			return err
		}
		start := time.Now()
		c, err := net.DialTimeout("tcp", "10.96.0.79:80", 3*time.Second)
		if err == nil {
			c.Close()
			t.Error("a TCP connection to a refused address was accepted")
		} else if !errors.Is(err, syscall.ECONNREFUSED) {
			t.Errorf("TCP: %v, want connection refused", err)
		}
		u, err := net.Dial("udp", "10.96.0.80:53")
		if err != nil {
			return err
		}
		defer u.Close()
		_, _ = u.Write([]byte("ping"))
		_ = u.SetReadDeadline(time.Now().Add(3 * time.Second))
		if _, err := u.Read(make([]byte, 16)); !errors.Is(err, syscall.ECONNREFUSED) {
			t.Errorf("UDP: %v, want connection refused (ICMP port unreachable)", err)
		}
		if d := time.Since(start); d > 2*time.Second {
			t.Errorf("refused after %s, want at once", d)
		}
		if mac := neighbour(host, "10.96.0.79"); mac != np.AnswerMAC {
			t.Errorf("the refused address answered ARP with %q, want the answer MAC %s", mac, np.AnswerMAC)
		}
		replacedBy(t, l, np)
		if err := l.Unplug(p.HostIf()); err != nil {
			return err
		}
		if _, err := netlink.LinkByName(p.HostIf()); err == nil {
			t.Error("the host end is still there after Unplug")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// neighbour is the MAC the "router" learnt for ip on link, "" if none.
func neighbour(link netlink.Link, ip string) string {
	neighs, _ := netlink.NeighList(link.Attrs().Index, netlink.FAMILY_V4)
	for _, n := range neighs {
		if n.IP.Equal(net.ParseIP(ip)) {
			return n.HardwareAddr.String()
		}
	}
	return ""
}

// replacedBy plugs another port that answers with np's MAC, as when the
// controller replaces a node's refuse port: the pair stays, with only the
// new port's address.
func replacedBy(t *testing.T, l *Linux, np kuryrv1.NodePort) {
	t.Helper()
	np.PortID, np.MACAddress, np.IPs = "1f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0", "fa:16:3e:00:00:0b", []string{"10.96.129.9/16"}
	p, err := NewPlan(np)
	if err != nil {
		t.Fatal(err)
	}
	if created, err := l.Plug(p, true); err != nil || created {
		t.Fatalf("plug the replacement: created %v, %v; want the pair kept", created, err)
	}
	var addrs []string
	err = l.ns.Do(func(ns.NetNS) error {
		link, err := netlink.LinkByName(podIf)
		if err != nil {
			return err
		}
		as, err := netlink.AddrList(link, netlink.FAMILY_ALL)
		for _, a := range as {
			addrs = append(addrs, a.IPNet.String())
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(addrs) != 1 || addrs[0] != "10.96.129.9/16" {
		t.Errorf("addresses after the port was replaced: %v, want only the new port's 10.96.129.9/16 (no IPv6 link-local)", addrs)
	}
}
