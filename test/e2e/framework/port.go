//go:build e2e

package framework

import (
	"context"
	"fmt"
	"net"
	"os/exec"
	"testing"
	"time"

	"github.com/containernetworking/plugins/pkg/ns"
	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/portsbinding"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/security/groups"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/security/rules"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/subnets"
	"github.com/vishvananda/netlink"
)

// PlugTimeout bounds how long a freshly plugged port may take to go ACTIVE.
// The first port on a network right after its router interface was added can
// take several seconds (Neutron retries the router port binding).
const PlugTimeout = 30 * time.Second

// BoundPort is a Neutron port bound to a node and plugged into its br-int,
// with the other end of the veth in its own namespace.
type BoundPort struct {
	Port  ports.Port
	IP    string
	Netns ns.NetNS
}

// CreateBoundPort creates a port on the pod network bound to node, the way a
// Nova VM or a kuryr pod port would be, open to everyone as a VM's group
// would make it (the pods' own group admits only the nodes), and deletes
// it at cleanup.
func (c *Cloud) CreateBoundPort(t testing.TB, node, name string) ports.Port {
	t.Helper()
	return c.createPort(t, node, name, c.PodNet, []string{c.PodSG, c.openGroup(t)})
}

// VM is a virtual machine as Neutron and the node see one: a port on a
// tenant network with a security group of its own, bound to a node and
// plugged into its br-int as Nova plugs a VM, its eth0 in a namespace.
type VM struct {
	*BoundPort
	Name string
}

// CreateVM makes a VM on the cloud's VM network (on the cluster's router),
// on node, with a security group of its own that admits everyone (as a
// VM's group that serves everyone does), and removes it at cleanup.
func (c *Cloud) CreateVM(t testing.TB, node, name string) *VM {
	t.Helper()
	p := c.createPort(t, node, "vm-"+name, c.VMNet, []string{c.openGroup(t)})
	bp := c.PlugPort(t, node, p, "vm-"+name)
	c.WaitPortActive(t, p.ID)
	return &VM{BoundPort: bp, Name: name}
}

func (c *Cloud) createPort(t testing.TB, node, name, network string, groups []string) ports.Port {
	t.Helper()
	ctx := context.Background()
	up := true
	opts := portsbinding.CreateOptsExt{
		CreateOptsBuilder: ports.CreateOpts{
			Name: name, NetworkID: network, ProjectID: c.ProjectID, AdminStateUp: &up,
			DeviceOwner: "compute:kuryr-e2e", SecurityGroups: &groups,
		},
		HostID: node,
	}
	p, err := ports.Create(ctx, c.OS.Network, opts).Extract()
	if err != nil {
		t.Fatalf("create port on %s: %v", node, err)
	}
	t.Cleanup(func() {
		if err := ports.Delete(context.Background(), c.OS.Network, p.ID).ExtractErr(); err != nil &&
			!gophercloud.ResponseCodeIs(err, 404) {
			t.Errorf("delete port %s: %v", p.ID, err)
		}
	})
	return *p
}

// openGroup creates a security group admitting everything (egress by
// Neutron's default rules) and deletes it at cleanup, after the ports
// created later.
func (c *Cloud) openGroup(t testing.TB) string {
	t.Helper()
	ctx := context.Background()
	sg, err := groups.Create(ctx, c.OS.Network, groups.CreateOpts{Name: Name("e2e-open"), ProjectID: c.ProjectID}).Extract()
	if err != nil {
		t.Fatalf("create security group: %v", err)
	}
	t.Cleanup(func() {
		if err := groups.Delete(context.Background(), c.OS.Network, sg.ID).ExtractErr(); err != nil {
			t.Errorf("delete security group %s: %v", sg.ID, err)
		}
	})
	for _, eth := range []rules.RuleEtherType{rules.EtherType4, rules.EtherType6} {
		if _, err := rules.Create(ctx, c.OS.Network, rules.CreateOpts{SecGroupID: sg.ID, ProjectID: c.ProjectID,
			Direction: rules.DirIngress, EtherType: eth}).Extract(); err != nil {
			t.Fatalf("open security group %s: %v", sg.ID, err)
		}
	}
	return sg.ID
}

// PlugPort wires port into node's br-int through a veth whose other end,
// eth0, sits in a new namespace with the port's MAC and address, as kuryr's
// OVS binding does for a pod.
func (c *Cloud) PlugPort(t testing.TB, node string, p ports.Port, name string) *BoundPort {
	t.Helper()
	if len(p.FixedIPs) == 0 {
		t.Fatalf("port %s has no fixed IP", p.ID)
	}
	sub, err := subnets.Get(context.Background(), c.OS.Network, p.FixedIPs[0].SubnetID).Extract()
	if err != nil {
		t.Fatalf("get subnet: %v", err)
	}
	_, cidr, err := net.ParseCIDR(sub.CIDR)
	if err != nil {
		t.Fatalf("subnet %s cidr %q: %v", sub.ID, sub.CIDR, err)
	}
	podNS := NewNetns(t, name)
	nodeNS := OpenNetns(t, c.NodeNetns(node))
	host := "tap" + p.ID[:11]
	mac, _ := net.ParseMAC(p.MACAddress)
	veth := &netlink.Veth{
		LinkAttrs:        netlink.LinkAttrs{Name: host, MTU: 1442, Namespace: netlink.NsFd(int(nodeNS.Fd()))},
		PeerName:         "eth0",
		PeerMTU:          1442,
		PeerHardwareAddr: mac,
		PeerNamespace:    netlink.NsFd(int(podNS.Fd())),
	}
	if err := netlink.LinkAdd(veth); err != nil {
		t.Fatalf("create veth %s: %v", host, err)
	}
	ip := net.ParseIP(p.FixedIPs[0].IPAddress)
	gw := net.ParseIP(sub.GatewayIP)
	if err := podNS.Do(func(ns.NetNS) error { return configurePodEnd(ip, cidr.Mask, gw) }); err != nil {
		t.Fatalf("configure eth0 in %s: %v", podNS.Path(), err)
	}
	if err := nodeNS.Do(func(ns.NetNS) error { return linkUp(host) }); err != nil {
		t.Fatalf("bring up %s: %v", host, err)
	}
	ovsdb := c.NodeOVSDB[node]
	out, err := exec.Command("ovs-vsctl", "--timeout=10", "--db="+ovsdb, "--", "--may-exist", "add-port", "br-int", host,
		"--", "set", "Interface", host, "external_ids:iface-id="+p.ID, "external_ids:attached-mac="+p.MACAddress,
		"external_ids:iface-status=active").CombinedOutput()
	if err != nil {
		t.Fatalf("ovs-vsctl add-port %s: %v: %s", host, err, out)
	}
	t.Cleanup(func() {
		_ = exec.Command("ovs-vsctl", "--timeout=10", "--db="+ovsdb, "--if-exists", "del-port", "br-int", host).Run()
	})
	// The userspace datapath does not complete partial checksums.
	if _, err := InNetns(context.Background(), podNS.Path(), "ethtool", "-K", "eth0", "tx", "off"); err != nil {
		t.Fatalf("disable tx offload: %v", err)
	}
	return &BoundPort{Port: p, IP: ip.String(), Netns: podNS}
}

func linkUp(name string) error {
	l, err := netlink.LinkByName(name)
	if err != nil {
		return fmt.Errorf("find %s: %w", name, err)
	}
	return netlink.LinkSetUp(l)
}

func configurePodEnd(ip net.IP, mask net.IPMask, gw net.IP) error {
	l, err := netlink.LinkByName("eth0")
	if err != nil {
		return fmt.Errorf("find eth0: %w", err)
	}
	if err := netlink.AddrAdd(l, &netlink.Addr{IPNet: &net.IPNet{IP: ip, Mask: mask}}); err != nil {
		return fmt.Errorf("add address: %w", err)
	}
	if err := netlink.LinkSetUp(l); err != nil {
		return fmt.Errorf("set up: %w", err)
	}
	if err := linkUp("lo"); err != nil {
		return err
	}
	if err := netlink.RouteAdd(&netlink.Route{LinkIndex: l.Attrs().Index, Gw: gw}); err != nil {
		return fmt.Errorf("default route via %s: %w", gw, err)
	}
	return nil
}

// WaitPortActive waits until Neutron reports the port ACTIVE and returns the
// time it took.
func (c *Cloud) WaitPortActive(t testing.TB, id string) time.Duration {
	t.Helper()
	start := time.Now()
	Eventually(t, PlugTimeout, 100*time.Millisecond, "port "+id+" ACTIVE", func() (bool, error) {
		p, err := ports.Get(context.Background(), c.OS.Network, id).Extract()
		if err != nil {
			return false, err
		}
		return p.Status == "ACTIVE", fmt.Errorf("status %s", p.Status)
	})
	return time.Since(start)
}
