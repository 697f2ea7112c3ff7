package plug

import (
	"net"
	"os"
	"runtime"
	"testing"

	"github.com/containernetworking/cni/pkg/types"
	current "github.com/containernetworking/cni/pkg/types/100"
	"github.com/containernetworking/plugins/pkg/ns"
	"github.com/containernetworking/plugins/pkg/testutils"
	"github.com/vishvananda/netlink"
)

// These tests plug into real network namespaces: they need root (CI and the
// local cloud run as root).
// kernel is the Kernel under test.
var kernel Kernel

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

func result(t *testing.T) *current.Result {
	t.Helper()
	ip, cidr, _ := net.ParseCIDR("10.99.0.5/24")
	gw := net.ParseIP("10.99.0.1")
	return &current.Result{
		CNIVersion: current.ImplementedSpecVersion,
		Interfaces: []*current.Interface{{Name: "tap0123456789"}, {Name: "eth0"}},
		IPs:        []*current.IPConfig{{Interface: current.Int(1), Address: net.IPNet{IP: ip, Mask: cidr.Mask}, Gateway: gw}},
		Routes:     []*types.Route{{Dst: net.IPNet{IP: net.IPv4zero, Mask: net.CIDRMask(0, 32)}, GW: gw}},
	}
}

func TestCreateInspectDeleteVeth(t *testing.T) {
	needRoot(t)
	node, pod := newNS(t), newNS(t)
	v := Veth{Netns: pod.Path(), IfName: "eth0", HostIf: "tap0123456789", MAC: "fa:16:3e:00:00:42", MTU: 1442,
		Result: result(t), TxChecksumOff: true}
	// The daemon runs in the node's namespace; so does this goroutine here.
	err := node.Do(func(ns.NetNS) error {
		runtime.LockOSThread()
		if err := kernel.CreateVeth(v); err != nil {
			return err
		}
		// Again: a retried ADD replaces what the first one made.
		return kernel.CreateVeth(v)
	})
	if err != nil {
		t.Fatal(err)
	}
	_ = node.Do(func(ns.NetNS) error {
		l, err := netlink.LinkByName("tap0123456789")
		if err != nil || l.Attrs().MTU != 1442 || l.Attrs().OperState == netlink.OperDown {
			t.Errorf("host end %+v, %v", l, err)
		}
		return nil
	})
	o, err := kernel.Inspect(pod.Path(), "eth0", net.ParseIP("10.99.0.1"))
	if err != nil {
		t.Fatal(err)
	}
	if !o.Exists || o.MAC != "fa:16:3e:00:00:42" || !contains(o.Addrs, "10.99.0.5/24") || !o.HasGW {
		t.Errorf("pod end %+v", o)
	}
	_ = node.Do(func(ns.NetNS) error { kernel.DeleteVeth("tap0123456789"); return nil })
	if o, _ := kernel.Inspect(pod.Path(), "eth0", nil); o.Exists {
		t.Error("deleting the host end left the pod end")
	}
}

func TestCreateVethRollsBack(t *testing.T) {
	needRoot(t)
	node, pod := newNS(t), newNS(t)
	v := Veth{Netns: pod.Path(), IfName: "eth0", HostIf: "tapbadbadbadba", MAC: "fa:16:3e:00:00:43", MTU: 1442, Result: result(t)}
	v.Result.IPs[0].Interface = current.Int(7) // points nowhere: configuring fails
	err := node.Do(func(ns.NetNS) error { return kernel.CreateVeth(v) })
	if err == nil {
		t.Fatal("want an error")
	}
	_ = node.Do(func(ns.NetNS) error {
		if _, err := netlink.LinkByName("tapbadbadbadba"); err == nil {
			t.Error("failed plug left its host end")
		}
		return nil
	})
}

func TestRemovePodIfToleratesMissingNetns(t *testing.T) {
	needRoot(t)
	if err := kernel.RemovePodIf("/run/netns/does-not-exist", "eth0"); err != nil {
		t.Errorf("got %v", err)
	}
	if err := kernel.RemovePodIf("", "eth0"); err != nil {
		t.Errorf("got %v", err)
	}
}

// RemovePodIf takes out a pod end whose host end is in the caller's
// namespace (a plug of this node), and leaves one whose host end is in
// another node's.
func TestRemovePodIfOnlyOwnPlugs(t *testing.T) {
	needRoot(t)
	node, other, pod := newNS(t), newNS(t), newNS(t)
	v := Veth{Netns: pod.Path(), IfName: "eth0", HostIf: "tap0123456789", MAC: "fa:16:3e:00:00:44", MTU: 1442, Result: result(t)}
	if err := other.Do(func(ns.NetNS) error { return kernel.CreateVeth(v) }); err != nil {
		t.Fatal(err)
	}
	// removeFrom runs RemovePodIf from a node's namespace and says whether
	// the pod end is still there.
	removeFrom := func(from ns.NetNS) bool {
		t.Helper()
		if err := from.Do(func(ns.NetNS) error { return kernel.RemovePodIf(pod.Path(), "eth0") }); err != nil {
			t.Fatal(err)
		}
		o, _ := kernel.Inspect(pod.Path(), "eth0", nil)
		return o.Exists
	}
	if !removeFrom(node) {
		t.Fatal("removed a pod end plugged by another node")
	}
	// Still not when the node has a link into the pod's namespace too (so
	// the pod's namespace numbers the node's).
	extra := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: "tapextra"}, PeerName: "eth1",
		PeerNamespace: netlink.NsFd(int(pod.Fd()))}
	if err := node.Do(func(ns.NetNS) error { return netlink.LinkAdd(extra) }); err != nil {
		t.Fatal(err)
	}
	if !removeFrom(node) {
		t.Fatal("removed a pod end plugged by another node, the node having a link into the pod's namespace")
	}
	if removeFrom(other) {
		t.Error("left the pod end of its own plug")
	}
}

func contains(list []string, s string) bool {
	for _, l := range list {
		if l == s {
			return true
		}
	}
	return false
}
