package svcports

import (
	"net/netip"
	"slices"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
)

// localEndpoints are the endpoints of one Service port on node that node
// ports with externalTrafficPolicy Local send to, chosen as the
// controller chooses load balancer members (pkg/controller/service
// members): the ready ones; when none is ready, the serving ones that are
// terminating, so that connections drain instead of failing; all of them
// with publishNotReadyAddresses. Only addresses of the ClusterIP's family:
// there is no NAT between families.
func localEndpoints(node, portName string, proto corev1.Protocol, cip netip.Addr, eps []*discoveryv1.EndpointSlice,
	publishNotReady bool, trusted func(netip.Addr) bool) []netip.AddrPort {
	var ready, terminating, all []netip.AddrPort
	for _, es := range eps {
		if es.AddressType != family(cip) {
			continue
		}
		port, ok := slicePort(es, portName, proto)
		if !ok {
			continue
		}
		for _, e := range es.Endpoints {
			if e.NodeName == nil || *e.NodeName != node {
				continue
			}
			for _, ap := range addrPorts(e.Addresses, port, cip, trusted) {
				all = append(all, ap)
				switch c := e.Conditions; {
				case c.Ready == nil || *c.Ready:
					ready = append(ready, ap)
				case c.Serving != nil && *c.Serving && c.Terminating != nil && *c.Terminating:
					terminating = append(terminating, ap)
				}
			}
		}
	}
	chosen := ready
	switch {
	case publishNotReady:
		chosen = all
	case len(ready) == 0:
		chosen = terminating
	}
	slices.SortFunc(chosen, netip.AddrPort.Compare)
	return slices.Compact(chosen)
}

// readyLocal counts the Service's ready endpoint addresses on node: what
// its health check answers. Terminating endpoints do not count, so that
// an external load balancer stops sending to a node whose endpoints are
// all going away (as kube-proxy's health check does).
func readyLocal(node string, cip netip.Addr, eps []*discoveryv1.EndpointSlice, trusted func(netip.Addr) bool) int {
	seen := map[netip.Addr]bool{}
	for _, es := range eps {
		if es.AddressType != family(cip) {
			continue
		}
		for _, e := range es.Endpoints {
			if e.NodeName == nil || *e.NodeName != node || (e.Conditions.Ready != nil && !*e.Conditions.Ready) {
				continue
			}
			for _, ap := range addrPorts(e.Addresses, 0, cip, trusted) {
				seen[ap.Addr()] = true
			}
		}
	}
	return len(seen)
}

func family(ip netip.Addr) discoveryv1.AddressType {
	if ip.Is4() {
		return discoveryv1.AddressTypeIPv4
	}
	return discoveryv1.AddressTypeIPv6
}

// slicePort is the slice's port of the Service port's name and protocol:
// the target port the API server resolved, named ones included.
func slicePort(es *discoveryv1.EndpointSlice, name string, proto corev1.Protocol) (uint16, bool) {
	for _, p := range es.Ports {
		pn, pp := "", corev1.ProtocolTCP
		if p.Name != nil {
			pn = *p.Name
		}
		if p.Protocol != nil {
			pp = *p.Protocol
		}
		if pn == name && pp == proto && p.Port != nil && *p.Port > 0 && *p.Port < 1<<16 {
			return uint16(*p.Port), true
		}
	}
	return 0, false
}

// addrPorts are the trusted addresses of the ClusterIP's family, with
// port.
func addrPorts(addrs []string, port uint16, cip netip.Addr, trusted func(netip.Addr) bool) []netip.AddrPort {
	var out []netip.AddrPort
	for _, a := range addrs {
		ip, err := netip.ParseAddr(a)
		if err != nil || ip.Zone() != "" || ip.Unmap().Is4() != cip.Is4() || (trusted != nil && !trusted(ip.Unmap())) {
			continue // the API server validates addresses; never trust it blindly
		}
		out = append(out, netip.AddrPortFrom(ip.Unmap(), port))
	}
	return out
}
