package daemon

import (
	"fmt"
	"net"

	"github.com/containernetworking/cni/pkg/types"
	current "github.com/containernetworking/cni/pkg/types/100"

	kuryrv1 "github.com/kuryr-k8s/kuryr/api/v1"
)

// Result is the CNI result for a pod plugged into vif: interface 0 is the
// host end (hostIf), 1 the pod end; a default route via the subnet gateway on the
// default VIF, then the subnet's host routes. Pure.
func Result(vif kuryrv1.VIF, hostIf, ifName, netns string) (*current.Result, error) {
	r := &current.Result{
		CNIVersion: current.ImplementedSpecVersion,
		Interfaces: []*current.Interface{
			{Name: hostIf},
			{Name: ifName, Mac: vif.MACAddress, Mtu: vif.MTU, Sandbox: netns},
		},
	}
	gw := net.ParseIP(vif.Gateway)
	for _, a := range vif.IPs {
		ip, cidr, err := net.ParseCIDR(a.Address)
		if err != nil {
			return nil, fmt.Errorf("port %s: address %q: %w", vif.PortID, a.Address, err)
		}
		c := &current.IPConfig{Interface: current.Int(1), Address: net.IPNet{IP: ip, Mask: cidr.Mask}}
		if gw != nil && (gw.To4() == nil) == (ip.To4() == nil) {
			c.Gateway = gw
		}
		r.IPs = append(r.IPs, c)
	}
	if len(r.IPs) == 0 {
		return nil, fmt.Errorf("port %s has no addresses", vif.PortID)
	}
	if vif.Default && gw != nil {
		r.Routes = append(r.Routes, &types.Route{Dst: defaultRoute(gw), GW: gw})
	}
	for _, rt := range vif.Routes {
		_, dst, err := net.ParseCIDR(rt.Destination)
		if err != nil {
			return nil, fmt.Errorf("port %s: route %q: %w", vif.PortID, rt.Destination, err)
		}
		r.Routes = append(r.Routes, &types.Route{Dst: *dst, GW: net.ParseIP(rt.Gateway)})
	}
	r.DNS.Nameservers = vif.DNS
	return r, nil
}

func defaultRoute(gw net.IP) net.IPNet {
	if gw.To4() != nil {
		return net.IPNet{IP: net.IPv4zero, Mask: net.CIDRMask(0, 32)}
	}
	return net.IPNet{IP: net.IPv6zero, Mask: net.CIDRMask(0, 128)}
}
