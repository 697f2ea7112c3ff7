package svcports

import (
	"net/netip"
	"slices"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"

	"github.com/kuryr-k8s/kuryr/pkg/endpoints"
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
	onNode := func(e *discoveryv1.Endpoint) bool { return e.NodeName != nil && *e.NodeName == node }
	chosen := endpoints.Choose(eps, family(cip), portName, proto, publishNotReady, onNode,
		func(e *discoveryv1.Endpoint, port int32) []netip.AddrPort {
			if port <= 0 || port >= 1<<16 {
				return nil
			}
			return addrPorts(e.Addresses, uint16(port), cip, trusted)
		})
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
