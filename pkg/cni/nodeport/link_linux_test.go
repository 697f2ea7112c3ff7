package nodeport

import (
	"errors"
	"net"
	"os"
	"sort"
	"strings"
	"testing"

	"github.com/containernetworking/plugins/pkg/ns"
	"github.com/containernetworking/plugins/pkg/testutils"
	"github.com/vishvananda/netlink"

	kuryrv1 "github.com/kuryr-k8s/kuryr/api/v1"
)

// Configure against a real interface in a new network namespace (root).
func TestConfigureLink(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("netns tests need root (CI and the local cloud run as root)")
	}
	n, err := testutils.NewNS()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = n.Close(); _ = testutils.UnmountNS(n) })
	plan := func(ip string, dests ...string) *Plan {
		np := kuryrv1.NodePort{PortID: "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0", MACAddress: "fa:16:3e:00:00:09", MTU: 1442, IPs: []string{ip}}
		for _, d := range dests {
			np.Routes = append(np.Routes, kuryrv1.Route{Destination: d, Gateway: "10.11.0.1"})
		}
		p, err := NewPlan(np)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	err = n.Do(func(ns.NetNS) error {
		if err := netlink.LinkAdd(&netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: "mgmt"}, PeerName: "peer"}); err != nil {
			return err
		}
		for _, p := range []*Plan{plan("10.11.0.5/24", "10.10.0.0/16", "10.96.0.0/16"), plan("10.11.0.5/24", "10.10.0.0/16", "10.96.0.0/16"),
			plan("10.11.0.6/24", "10.10.0.0/16")} {
			if err := (Linux{}).Configure("mgmt", p, true); err != nil {
				return err
			}
		}
		l, _ := netlink.LinkByName("mgmt")
		if l.Attrs().HardwareAddr.String() != "fa:16:3e:00:00:09" || l.Attrs().MTU != 1442 || l.Attrs().Flags&net.FlagUp == 0 {
			t.Errorf("link %+v", l.Attrs())
		}
		addrs, _ := netlink.AddrList(l, netlink.FAMILY_V4)
		if len(addrs) != 1 || addrs[0].IPNet.String() != "10.11.0.6/24" {
			t.Errorf("addresses %v, want only 10.11.0.6/24", addrs)
		}
		routes, _ := netlink.RouteList(l, netlink.FAMILY_V4)
		var got []string
		for _, r := range routes {
			if r.Gw != nil {
				got = append(got, r.Dst.String()+" via "+r.Gw.String())
			}
		}
		sort.Strings(got)
		if len(got) != 1 || got[0] != "10.10.0.0/16 via 10.11.0.1" {
			t.Errorf("routes %v, want only 10.10.0.0/16 via 10.11.0.1", got)
		}
		// A route over one of the node's own networks is refused.
		peer, _ := netlink.LinkByName("peer")
		own, _ := netlink.ParseAddr("10.10.5.1/24")
		if err := netlink.AddrAdd(peer, own); err != nil {
			return err
		}
		var left *RoutesLeftOut
		if err := (Linux{}).Configure("mgmt", plan("10.11.0.6/24", "10.10.0.0/16", "10.96.0.0/16"), false); !errors.As(err, &left) ||
			len(left.Routes) != 1 || !strings.HasPrefix(left.Routes[0], "10.10.0.0/16") {
			t.Errorf("a route covering the node's own address 10.10.5.1: %v, want it left out alone", err)
		}
		routes, _ = netlink.RouteList(l, netlink.FAMILY_V4)
		got = nil
		for _, r := range routes {
			if r.Gw != nil {
				got = append(got, r.Dst.String())
			}
		}
		if len(got) != 1 || got[0] != "10.96.0.0/16" {
			t.Errorf("routes %v, want the other route kept", got)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
