// Package endpoints chooses, as Kubernetes does, which endpoints of a
// Service's EndpointSlices take its traffic: the load balancer's members
// (the controller) and the node-local endpoints of node ports (the
// daemons) follow the same rule.
package endpoints

import (
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
)

// Choose walks the endpoints of the slices of one address family that
// serve the Service port (name, proto) and keep accepts, and returns what
// make makes of them: the ready ones; when none is ready, the serving ones
// that are terminating (so that connections drain instead of failing);
// all of them with publishNotReady. port is the slice's port of that name
// and protocol: the target port Kubernetes resolved, named ones included.
func Choose[T any](slices []*discoveryv1.EndpointSlice, family discoveryv1.AddressType, name string, proto corev1.Protocol,
	publishNotReady bool, keep func(*discoveryv1.Endpoint) bool, make func(e *discoveryv1.Endpoint, port int32) []T) []T {
	var ready, terminating, all []T
	for _, es := range slices {
		if es.AddressType != family {
			continue
		}
		port, ok := Port(es, name, proto)
		if !ok {
			continue
		}
		for i := range es.Endpoints {
			e := &es.Endpoints[i]
			if keep != nil && !keep(e) {
				continue
			}
			for _, v := range make(e, port) {
				all = append(all, v)
				switch c := e.Conditions; {
				case c.Ready == nil || *c.Ready:
					ready = append(ready, v)
				case c.Serving != nil && *c.Serving && c.Terminating != nil && *c.Terminating:
					terminating = append(terminating, v)
				}
			}
		}
	}
	switch {
	case publishNotReady:
		return all
	case len(ready) == 0:
		return terminating
	}
	return ready
}

// Port is the slice's port of the Service port's name and protocol (the
// default protocol is TCP).
func Port(es *discoveryv1.EndpointSlice, name string, proto corev1.Protocol) (int32, bool) {
	for _, p := range es.Ports {
		pn, pp := "", corev1.ProtocolTCP
		if p.Name != nil {
			pn = *p.Name
		}
		if p.Protocol != nil {
			pp = *p.Protocol
		}
		if pn == name && pp == proto && p.Port != nil {
			return *p.Port, true
		}
	}
	return 0, false
}
