// Package svcports serves Kubernetes node ports on this node, natively:
// kuryr runs no kube-proxy. A packet to any of the node's addresses at a
// Service's node port is DNATed to the Service's ClusterIP (the Octavia
// load balancer's VIP, reached through the management port), or, with
// externalTrafficPolicy Local, to one of this node's own endpoints, and
// masqueraded: pods answer through the OVN router, not through the node,
// so without SNAT their replies would bypass the node's conntrack.
//
// The planner (this file) is pure; the applier owns one nftables table
// (table_linux.go), and the agent re-applies it on every change and
// periodically (agent.go). The package is named svcports, not nodeport,
// because pkg/cni/nodeport is the node's management port.
package svcports

import (
	"cmp"
	"net/netip"
	"slices"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
)

// Ruleset is everything this node serves: its node ports and the health
// check ports of LoadBalancer Services with externalTrafficPolicy Local.
// Two equal Rulesets program the same table (reflect.DeepEqual).
type Ruleset struct {
	Ports  []NodePort
	Health []HealthCheck
}

// NodePort is one (protocol, node port) of a Service.
type NodePort struct {
	// Service is namespace/name, for logs.
	Service  string
	Protocol corev1.Protocol
	Port     uint16
	// Target is the ClusterIP and Service port: where node-port traffic
	// goes with externalTrafficPolicy Cluster, and where the node's own
	// traffic always goes (as with kube-proxy).
	Target netip.AddrPort
	// Local is externalTrafficPolicy Local: traffic from elsewhere goes
	// only to Endpoints, this node's own, and is dropped when there is none.
	Local     bool
	Endpoints []netip.AddrPort
}

// HealthCheck is a Service's healthCheckNodePort and what it answers: how
// many of the Service's ready endpoints are on this node.
type HealthCheck struct {
	Port            uint16
	Namespace, Name string
	LocalEndpoints  int
}

// Desired computes the ruleset of node: every port with a node port of the
// Services of type NodePort and LoadBalancer that have a ClusterIP (a
// headless Service has nothing to DNAT to). eps are the EndpointSlices
// of Services with externalTrafficPolicy Local (others need none); a node
// port claimed twice (the API server never allocates one twice) goes to
// the first Service by namespace and name. Endpoint addresses count only
// when trusted says so (an EndpointSlice is user-writable: only this
// node's pods and the node's own addresses may be DNATed to); nil trusts
// all. Pure.
func Desired(node string, svcs []corev1.Service, eps []discoveryv1.EndpointSlice, trusted func(netip.Addr) bool) Ruleset {
	bySvc := map[string][]*discoveryv1.EndpointSlice{}
	for i := range eps {
		es := &eps[i]
		if name := es.Labels[discoveryv1.LabelServiceName]; name != "" {
			bySvc[es.Namespace+"/"+name] = append(bySvc[es.Namespace+"/"+name], es)
		}
	}
	ordered := make([]*corev1.Service, 0, len(svcs))
	for i := range svcs {
		ordered = append(ordered, &svcs[i])
	}
	slices.SortFunc(ordered, func(a, b *corev1.Service) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
	var rs Ruleset
	taken := map[portKey]bool{}
	healthTaken := map[uint16]bool{}
	for _, svc := range ordered {
		cip, ok := clusterIP(svc)
		if !ok {
			continue
		}
		key := svc.Namespace + "/" + svc.Name
		local := svc.Spec.ExternalTrafficPolicy == corev1.ServiceExternalTrafficPolicyLocal
		for _, p := range svc.Spec.Ports {
			np := nodePort(key, cip, p)
			if np.Port == 0 || taken[portKey{np.Protocol, np.Port}] {
				continue
			}
			taken[portKey{np.Protocol, np.Port}] = true
			if local {
				np.Local = true
				np.Endpoints = localEndpoints(node, p.Name, np.Protocol, cip, bySvc[key], svc.Spec.PublishNotReadyAddresses, trusted)
			}
			rs.Ports = append(rs.Ports, np)
		}
		if hc := svc.Spec.HealthCheckNodePort; local && hc > 0 && hc < 1<<16 && !healthTaken[uint16(hc)] {
			healthTaken[uint16(hc)] = true
			rs.Health = append(rs.Health, HealthCheck{Port: uint16(hc), Namespace: svc.Namespace, Name: svc.Name,
				LocalEndpoints: readyLocal(node, cip, bySvc[key], trusted)})
		}
	}
	slices.SortFunc(rs.Ports, func(a, b NodePort) int {
		return cmp.Or(cmp.Compare(a.Protocol, b.Protocol), cmp.Compare(a.Port, b.Port))
	})
	slices.SortFunc(rs.Health, func(a, b HealthCheck) int { return cmp.Compare(a.Port, b.Port) })
	return rs
}

type portKey struct {
	proto corev1.Protocol
	port  uint16
}

// clusterIP is the Service's first ClusterIP (the one kuryr's load
// balancer serves), for the types that have node ports.
func clusterIP(svc *corev1.Service) (netip.Addr, bool) {
	if t := svc.Spec.Type; t != corev1.ServiceTypeNodePort && t != corev1.ServiceTypeLoadBalancer {
		return netip.Addr{}, false
	}
	ip, err := netip.ParseAddr(svc.Spec.ClusterIP)
	if err != nil || ip.Zone() != "" {
		return netip.Addr{}, false // "", "None" (headless), or garbage
	}
	return ip.Unmap(), true
}

func nodePort(svc string, cip netip.Addr, p corev1.ServicePort) NodePort {
	proto := p.Protocol
	if proto == "" {
		proto = corev1.ProtocolTCP
	}
	switch {
	case proto != corev1.ProtocolTCP && proto != corev1.ProtocolUDP && proto != corev1.ProtocolSCTP,
		p.NodePort <= 0 || p.NodePort >= 1<<16 || p.Port <= 0 || p.Port >= 1<<16:
		return NodePort{}
	}
	return NodePort{Service: svc, Protocol: proto, Port: uint16(p.NodePort), Target: netip.AddrPortFrom(cip, uint16(p.Port))}
}
