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
	p, err := NewPlan(refusePort("0.0.0.0/0", "10.96.255.254", "10.96.0.0/17"))
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
