// Package nodeport plugs a node's management port, which kuryr-controller
// creates in Neutron and announces on the Node (annotation
// kuryr.openstack.org/node-port): an OVS internal interface on the node's
// integration bridge carrying the port's id and MAC, with the port's
// addresses and routes to the pod and service subnets through the router.
// The node then reaches every pod without NAT, with its own address as
// the source, which is what the kubelet's probes need.
package nodeport

import (
	"fmt"
	"net"

	"github.com/google/uuid"

	kuryrv1 "github.com/kuryr-k8s/kuryr/api/v1"
)

// Plan is what the node configures: everything checked, the interface
// name fixed (never taken from the annotation).
type Plan struct {
	PortID string
	MAC    net.HardwareAddr
	MTU    int
	Addrs  []*net.IPNet // with the address itself in IP
	Routes []Route
}

// Route is a destination reached through a gateway on the port's subnet.
type Route struct {
	Dst *net.IPNet
	Gw  net.IP
}

// NewPlan checks a NodePort another component wrote. Pure.
func NewPlan(np kuryrv1.NodePort) (*Plan, error) {
	p, err := NewPortPlan(np)
	if err != nil {
		return nil, err
	}
	for _, r := range np.Routes {
		rt, err := p.route(r)
		if err != nil {
			return nil, err
		}
		p.Routes = append(p.Routes, rt)
	}
	return p, nil
}

// NewPortPlan checks the port's own part of a NodePort another component
// wrote (id, MAC, MTU, addresses), not its routes. Pure.
func NewPortPlan(np kuryrv1.NodePort) (*Plan, error) {
	if _, err := uuid.Parse(np.PortID); err != nil || len(np.PortID) != 36 {
		return nil, fmt.Errorf("port id %q is not a UUID", np.PortID)
	}
	mac, err := net.ParseMAC(np.MACAddress)
	if err != nil || len(mac) != 6 || mac[0]&1 == 1 {
		return nil, fmt.Errorf("MAC address %q is not a unicast Ethernet address", np.MACAddress)
	}
	if np.MTU != 0 && (np.MTU < 576 || np.MTU > 65535) {
		return nil, fmt.Errorf("MTU %d out of range", np.MTU)
	}
	p := &Plan{PortID: np.PortID, MAC: mac, MTU: np.MTU}
	for _, a := range np.IPs {
		ip, n, err := net.ParseCIDR(a)
		if err != nil {
			return nil, fmt.Errorf("address %q: %w", a, err)
		}
		p.Addrs = append(p.Addrs, &net.IPNet{IP: ip, Mask: n.Mask})
	}
	if len(p.Addrs) == 0 {
		return nil, fmt.Errorf("port %s has no address", np.PortID)
	}
	return p, nil
}

// OnSubnet reports whether gw is on one of the port's subnets.
func (p *Plan) OnSubnet(gw net.IP) bool {
	for _, a := range p.Addrs {
		if gw != nil && (&net.IPNet{IP: a.IP.Mask(a.Mask), Mask: a.Mask}).Contains(gw) {
			return true
		}
	}
	return false
}

// minPrefix is the widest route accepted: /8 in IPv4, /16 in IPv6.
func minPrefix(bits int) int {
	if bits == 32 {
		return 8
	}
	return 16
}

// route checks a route: a real destination (never a default route: the
// node's own uplink keeps those) through a gateway on the port's subnet.
func (p *Plan) route(r kuryrv1.Route) (Route, error) {
	_, dst, err := net.ParseCIDR(r.Destination)
	if err != nil {
		return Route{}, fmt.Errorf("route destination %q: %w", r.Destination, err)
	}
	if ones, bits := dst.Mask.Size(); ones < minPrefix(bits) {
		return Route{}, fmt.Errorf("route %s: wider than /%d (the node's own uplink keeps default routes)", r.Destination, minPrefix(bits))
	}
	gw := net.ParseIP(r.Gateway)
	if !p.OnSubnet(gw) {
		return Route{}, fmt.Errorf("route %s: gateway %q is not on the port's subnet", r.Destination, r.Gateway)
	}
	return Route{Dst: dst, Gw: gw}, nil
}
