package plug

import (
	"errors"
	"net"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/containernetworking/plugins/pkg/ns"
	"github.com/vishvananda/netlink"

	"github.com/kuryr-k8s/kuryr/pkg/names"
)

// vmNIC makes the NIC of a VM node: ens3 in the node's namespace, a veth
// whose other end is the "network" (10.99.0.1/24 in a namespace of its
// own), as a VM's tap reaches the cloud.
func vmNIC(t *testing.T, node, network ns.NetNS) {
	t.Helper()
	err := node.Do(func(ns.NetNS) error {
		attrs := netlink.NewLinkAttrs()
		attrs.Name, attrs.MTU = "ens3", 1500
		if err := netlink.LinkAdd(&netlink.Veth{LinkAttrs: attrs, PeerName: "net0"}); err != nil {
			return err
		}
		l, _ := netlink.LinkByName("ens3")
		if err := netlink.LinkSetUp(l); err != nil {
			return err
		}
		addr, _ := netlink.ParseAddr("10.99.0.2/24") // the VM's own address
		if err := netlink.AddrAdd(l, addr); err != nil {
			return err
		}
		peer, _ := netlink.LinkByName("net0")
		return netlink.LinkSetNsFd(peer, int(network.Fd()))
	})
	if err != nil {
		t.Fatal(err)
	}
	err = network.Do(func(ns.NetNS) error {
		l, err := netlink.LinkByName("net0")
		if err != nil {
			return err
		}
		addr, _ := netlink.ParseAddr("10.99.0.1/24")
		if err := netlink.AddrAdd(l, addr); err != nil {
			return err
		}
		return netlink.LinkSetUp(l)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestNestedMacvlan: a pod of a VM node gets a macvlan of the VM's NIC
// with its port's MAC and address, reaches the network through the NIC,
// reaches the node through the node's shim (a NIC cannot reach its own
// macvlans), and its interface is taken out again by RemovePodIf (it is
// this node's plug); a retried ADD replaces what the first made; an MTU above the
// NIC's is refused, saying which option lowers it.
func TestNestedMacvlan(t *testing.T) {
	needRoot(t)
	node, pod, network := newNS(t), newNS(t), newNS(t)
	vmNIC(t, node, network)
	n := Nested{Netns: pod.Path(), IfName: "eth0", TempName: "tap0123456789", Link: "ens3",
		MAC: "fa:16:3e:00:00:42", MTU: 1442, Result: result(t)}
	err := node.Do(func(ns.NetNS) error {
		runtime.LockOSThread()
		if err := kernel.CreateNested(n); err != nil {
			return err
		}
		return kernel.CreateNested(n)
	})
	if err != nil {
		t.Fatal(err)
	}
	var link string
	_ = pod.Do(func(ns.NetNS) error { link, err = kernel.DefaultRouteLink(); return nil })
	if err != nil || link != "eth0" {
		t.Errorf("default route's interface in the pod: %q, %v", link, err)
	}
	o, err := kernel.Inspect(pod.Path(), "eth0", net.ParseIP("10.99.0.1"))
	if err != nil || !o.Exists || o.MAC != n.MAC || !contains(o.Addrs, "10.99.0.5/24") || !o.HasGW || o.Kind != "macvlan" {
		t.Fatalf("pod interface %+v, %v", o, err)
	}
	// The network answers the pod through the NIC.
	var ln net.Listener
	_ = network.Do(func(ns.NetNS) error { ln, err = net.Listen("tcp", "10.99.0.1:0"); return err })
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		if c, err := ln.Accept(); err == nil {
			_, _ = c.Write([]byte("hello"))
			c.Close()
		}
	}()
	err = pod.Do(func(ns.NetNS) error {
		c, err := net.DialTimeout("tcp", ln.Addr().String(), 5*time.Second)
		if err != nil {
			return err
		}
		defer c.Close()
		buf := make([]byte, 5)
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		_, err = c.Read(buf)
		return err
	})
	if err != nil {
		t.Fatalf("pod to the network through the VM's NIC: %v", err)
	}
	// The node reaches its own pod through its shim.
	err = node.Do(func(ns.NetNS) error { return kernel.RouteViaShim("ens3", net.ParseIP("10.99.0.5")) })
	if err != nil {
		t.Fatal(err)
	}
	var podLn net.Listener
	_ = pod.Do(func(ns.NetNS) error { podLn, err = net.Listen("tcp", "10.99.0.5:0"); return err })
	if err != nil {
		t.Fatal(err)
	}
	defer podLn.Close()
	go func() {
		if c, err := podLn.Accept(); err == nil {
			c.Close()
		}
	}()
	err = node.Do(func(ns.NetNS) error {
		c, err := net.DialTimeout("tcp", podLn.Addr().String(), 5*time.Second)
		if err == nil {
			c.Close()
		}
		return err
	})
	if err != nil {
		t.Fatalf("node to its own macvlan pod: %v", err)
	}
	var routed bool
	_ = node.Do(func(ns.NetNS) error { routed, err = kernel.ShimRouted(net.ParseIP("10.99.0.5")); return nil })
	if err != nil || !routed {
		t.Errorf("ShimRouted after RouteViaShim: %v, %v", routed, err)
	}
	if err := node.Do(func(ns.NetNS) error { return kernel.UnrouteViaShim(net.ParseIP("10.99.0.5")) }); err != nil {
		t.Fatal(err)
	}
	_ = node.Do(func(ns.NetNS) error { routed, err = kernel.ShimRouted(net.ParseIP("10.99.0.5")); return nil })
	if err != nil || routed {
		t.Errorf("ShimRouted after UnrouteViaShim: %v, %v", routed, err)
	}
	// A shim left down (a crash between its add and up) is brought up.
	err = node.Do(func(ns.NetNS) error {
		shim, err := netlink.LinkByName(names.MacvlanShim)
		if err != nil {
			return err
		}
		if err := netlink.LinkSetDown(shim); err != nil {
			return err
		}
		return kernel.RouteViaShim("ens3", net.ParseIP("10.99.0.5"))
	})
	if err != nil {
		t.Errorf("route via a shim left down: %v", err)
	}
	// A new sandbox of the pod while the old one's namespace still holds
	// its macvlan (same MAC): in use, to be tried again.
	n2 := n
	n2.Netns, n2.Result = newNS(t).Path(), result(t)
	err = node.Do(func(ns.NetNS) error { return kernel.CreateNested(n2) })
	if !errors.Is(err, ErrInUse) {
		t.Errorf("second macvlan with the MAC of one in use: %v, want ErrInUse", err)
	}
	if err := node.Do(func(ns.NetNS) error { return kernel.RemovePodIf(pod.Path(), "eth0") }); err != nil {
		t.Fatal(err)
	}
	if o, _ := kernel.Inspect(pod.Path(), "eth0", nil); o.Exists {
		t.Error("pod interface left after RemovePodIf")
	}
	n.MTU = 9000
	err = node.Do(func(ns.NetNS) error { return kernel.CreateNested(n) })
	if err == nil || !strings.Contains(err.Error(), "network_device_mtu") {
		t.Errorf("MTU above the NIC's: %v", err)
	}
}

// TestNestedAnnouncesAddress: a pod's new interface announces its address
// with a gratuitous ARP, so that a router that held the address with
// another MAC (a deleted pod's, as OVN keeps a MAC_Binding learnt behind a
// VM's port) takes the new one before any traffic.
func TestNestedAnnouncesAddress(t *testing.T) {
	needRoot(t)
	node, pod, network := newNS(t), newNS(t), newNS(t)
	vmNIC(t, node, network)
	const oldMAC, newMAC = "fa:16:3e:00:00:01", "fa:16:3e:00:00:42"
	podIP := net.ParseIP("10.99.0.5")
	neighbour := func() (string, error) {
		var mac string
		err := network.Do(func(ns.NetNS) error {
			l, err := netlink.LinkByName("net0")
			if err != nil {
				return err
			}
			neighs, err := netlink.NeighList(l.Attrs().Index, netlink.FAMILY_V4)
			for _, nb := range neighs {
				if nb.IP.Equal(podIP) {
					mac = nb.HardwareAddr.String()
				}
			}
			return err
		})
		return mac, err
	}
	err := network.Do(func(ns.NetNS) error {
		l, err := netlink.LinkByName("net0")
		if err != nil {
			return err
		}
		old, _ := net.ParseMAC(oldMAC)
		return netlink.NeighSet(&netlink.Neigh{LinkIndex: l.Attrs().Index, Family: netlink.FAMILY_V4,
			State: netlink.NUD_STALE, IP: podIP, HardwareAddr: old})
	})
	if err != nil {
		t.Fatal(err)
	}
	if mac, err := neighbour(); err != nil || mac != oldMAC {
		t.Fatalf("the network's neighbour entry for %s before: %q, %v; want %s", podIP, mac, err, oldMAC)
	}
	n := Nested{Netns: pod.Path(), IfName: "eth0", TempName: "tap0123456789", Link: "ens3",
		MAC: newMAC, MTU: 1442, Result: result(t)}
	if err := node.Do(func(ns.NetNS) error { return kernel.CreateNested(n) }); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		mac, err := neighbour()
		if err != nil {
			t.Fatal(err)
		}
		if mac == newMAC {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the network still has %s at %q after the pod's interface came up, want %s (no gratuitous ARP)", podIP, mac, newMAC)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// An interface with no IPv4 address has nothing to announce (and needs no
// packet socket).
func TestAnnounceIPv6Only(t *testing.T) {
	res := result(t)
	res.IPs[0].Address = net.IPNet{IP: net.ParseIP("fd00::5"), Mask: net.CIDRMask(64, 128)}
	if err := announce("/nonexistent", "eth0", res); err != nil {
		t.Fatalf("announce of an IPv6-only interface: %v", err)
	}
}
