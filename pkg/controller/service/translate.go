// Package service turns each Service kuryr serves, with its EndpointSlices,
// into the spec of a KuryrLoadBalancer: the VIP, one port per (protocol,
// port), and the ready endpoints behind each. It writes the spec only; the
// loadbalancer package makes Octavia match it.
package service

import (
	"net/netip"
	"slices"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"

	kuryrv1 "github.com/kuryr-k8s/kuryr/api/v1"
	"github.com/kuryr-k8s/kuryr/pkg/config"
	"github.com/kuryr-k8s/kuryr/pkg/endpoints"
)

// Settings are the parts of kuryr.conf the translation uses.
type Settings struct {
	Provider, Algorithm string
	// SubnetID is the service subnet (the VIPs').
	SubnetID  string
	ProjectID string
	// Class is the loadBalancerClass kuryr serves besides none.
	Class string
	// External: an external network gives LoadBalancer Services floating
	// IPs.
	External bool
	// RequireSubnet: the provider refuses members without a subnet (ovn:
	// it must know the member's logical switch).
	RequireSubnet bool
	// Exposure says how the pods' own security groups admit the external
	// network (see neutron.Exposure); "" when they do not.
	Exposure string
	// NodePorts: the kuryr-daemons serve node ports ([kubernetes]
	// serve_node_ports), masqueraded, to the ClusterIP or, with
	// externalTrafficPolicy Local, to the node's own endpoints.
	NodePorts bool
	// ExternalIPs: the Services' externalIPs are served ([kubernetes]
	// serve_external_ips).
	ExternalIPs bool
	// Classes are kuryr.conf's [LoadBalancerClass "name"] sections, which
	// loadbalancer.openstack.org/class names.
	Classes map[string]config.LoadBalancerClass
}

// SubnetFunc names the Neutron subnet an endpoint address is on ("" when
// kuryr does not know one).
type SubnetFunc func(ip netip.Addr) string

// Skip says why a Service gets no load balancer ("" when it gets one).
func Skip(svc *corev1.Service, class string) string {
	switch {
	case svc.Spec.Type == corev1.ServiceTypeExternalName:
		return "ExternalName Services are answered by DNS alone"
	case svc.Spec.ClusterIP == corev1.ClusterIPNone:
		return "headless Services have no VIP"
	case svc.Spec.ClusterIP == "":
		return "no ClusterIP allocated yet"
	}
	return ""
}

// foreignClass reports a LoadBalancer Service whose external load balancer
// is another controller's: kuryr still serves its ClusterIP (there is no
// kube-proxy), and leaves the external side and the Service's status alone.
func foreignClass(svc *corev1.Service, class string) bool {
	return svc.Spec.LoadBalancerClass != nil && *svc.Spec.LoadBalancerClass != class
}

// Desired is the KuryrLoadBalancer spec of a served Service, and the
// endpoint addresses left out because no Neutron subnet holds them while
// the provider requires one.
func Desired(svc *corev1.Service, eps []discoveryv1.EndpointSlice, s Settings, subnet SubnetFunc) (kuryrv1.KuryrLoadBalancerSpec, []string) {
	spec := kuryrv1.KuryrLoadBalancerSpec{
		IP: svc.Spec.ClusterIP, Type: string(corev1.ServiceTypeClusterIP), Provider: s.Provider,
		Algorithm: s.Algorithm, SubnetID: s.SubnetID, ProjectID: s.ProjectID,
	}
	if svc.Spec.Type == corev1.ServiceTypeLoadBalancer && !foreignClass(svc, s.Class) {
		spec.Type = string(corev1.ServiceTypeLoadBalancer)
		spec.LoadBalancerIP = svc.Spec.LoadBalancerIP
		spec.SourceRanges = slices.Clone(svc.Spec.LoadBalancerSourceRanges)
		slices.Sort(spec.SourceRanges)
		spec.External, _ = externalSpec(svc.Annotations, s.Classes)
	} else {
		if s.ExternalIPs {
			spec.ExternalIPs = slices.Clone(svc.Spec.ExternalIPs)
		}
		// A floating IP kuryr allocated while it was a LoadBalancer (or
		// for an external IP) is kept when it goes.
		if ext, _ := externalSpec(svc.Annotations, s.Classes); ext != nil && ext.KeepFloatingIP {
			spec.External = &kuryrv1.ExternalSpec{KeepFloatingIP: true}
		}
	}
	spec.AffinityTimeoutSeconds = affinityTimeout(&svc.Spec)
	family := discoveryv1.AddressTypeIPv4
	if ip, err := netip.ParseAddr(svc.Spec.ClusterIP); err == nil && ip.Is6() {
		family = discoveryv1.AddressTypeIPv6
	}
	var unplaced []string
	for _, p := range svc.Spec.Ports {
		proto := p.Protocol
		if proto == "" {
			proto = corev1.ProtocolTCP
		}
		ms := members(p.Name, proto, family, eps, svc.Spec.PublishNotReadyAddresses, subnet)
		if s.RequireSubnet {
			ms = slices.DeleteFunc(ms, func(m kuryrv1.LoadBalancerMember) bool {
				if m.SubnetID == "" && !slices.Contains(unplaced, m.IP) {
					unplaced = append(unplaced, m.IP)
				}
				return m.SubnetID == ""
			})
		}
		spec.Ports = append(spec.Ports, kuryrv1.LoadBalancerPort{
			Name: p.Name, Protocol: string(proto), Port: p.Port, TargetPort: p.TargetPort.String(), Members: ms,
		})
	}
	slices.SortFunc(spec.Ports, func(a, b kuryrv1.LoadBalancerPort) int {
		return cmpPort(a.Protocol, a.Port, b.Protocol, b.Port)
	})
	return spec, unplaced
}

// affinityTimeout is a ClientIP affinity's timeout in seconds (the API
// server defaults it to 10800), 0 without affinity.
func affinityTimeout(sp *corev1.ServiceSpec) int32 {
	if sp.SessionAffinity != corev1.ServiceAffinityClientIP {
		return 0
	}
	if c := sp.SessionAffinityConfig; c != nil && c.ClientIP != nil && c.ClientIP.TimeoutSeconds != nil && *c.ClientIP.TimeoutSeconds > 0 {
		return *c.ClientIP.TimeoutSeconds
	}
	return corev1.DefaultClientIPServiceAffinitySeconds
}

func cmpPort(pa string, a int32, pb string, b int32) int {
	if a != b {
		return int(a - b)
	}
	switch {
	case pa < pb:
		return -1
	case pa > pb:
		return 1
	}
	return 0
}

// members are the endpoints behind one Service port, chosen as
// Kubernetes does (package endpoints), at the slice's port.
func members(name string, proto corev1.Protocol, family discoveryv1.AddressType, eps []discoveryv1.EndpointSlice,
	publishNotReady bool, subnet SubnetFunc) []kuryrv1.LoadBalancerMember {
	ptrs := make([]*discoveryv1.EndpointSlice, len(eps))
	for i := range eps {
		ptrs[i] = &eps[i]
	}
	return dedup(endpoints.Choose(ptrs, family, name, proto, publishNotReady, nil,
		func(e *discoveryv1.Endpoint, port int32) []kuryrv1.LoadBalancerMember {
			return endpointMembers(e, port, subnet)
		}))
}

func endpointMembers(e *discoveryv1.Endpoint, port int32, subnet SubnetFunc) []kuryrv1.LoadBalancerMember {
	ref := ""
	if t := e.TargetRef; t != nil && t.Name != "" {
		ref = t.Namespace + "/" + t.Name
	}
	var out []kuryrv1.LoadBalancerMember
	for _, a := range e.Addresses {
		ip, err := netip.ParseAddr(a)
		if err != nil {
			continue // the API server validates addresses; never trust it blindly
		}
		out = append(out, kuryrv1.LoadBalancerMember{IP: ip.String(), Port: port, SubnetID: subnet(ip), TargetRef: ref})
	}
	return out
}

func dedup(ms []kuryrv1.LoadBalancerMember) []kuryrv1.LoadBalancerMember {
	slices.SortFunc(ms, func(a, b kuryrv1.LoadBalancerMember) int {
		if c := compareIP(a.IP, b.IP); c != 0 {
			return c
		}
		return int(a.Port - b.Port)
	})
	return slices.CompactFunc(ms, func(a, b kuryrv1.LoadBalancerMember) bool { return a.IP == b.IP && a.Port == b.Port })
}

func compareIP(a, b string) int {
	x, _ := netip.ParseAddr(a)
	y, _ := netip.ParseAddr(b)
	return x.Compare(y)
}

// Warnings say what the Service asks for that kuryr does not enforce, so
// that users are never left to find out.
func Warnings(svc *corev1.Service, s Settings) []string {
	var w []string
	sp := &svc.Spec
	if sp.Type == corev1.ServiceTypeNodePort && !s.NodePorts {
		w = append(w, "type NodePort: node ports are not served ([kubernetes] serve_node_ports is false and kuryr runs no kube-proxy); the ClusterIP is")
	}
	switch {
	case len(sp.ExternalIPs) > 0 && !s.ExternalIPs:
		w = append(w, "externalIPs are not served: [kubernetes] serve_external_ips is false")
	case len(sp.ExternalIPs) > 0 && sp.Type == corev1.ServiceTypeLoadBalancer:
		w = append(w, "externalIPs are not served on a LoadBalancer Service: its VIP carries one floating IP, the LoadBalancer's")
	}
	if len(sp.ClusterIPs) > 1 {
		w = append(w, "dual-stack: only the first ClusterIP ("+sp.ClusterIP+") is served")
	}
	if sp.ExternalTrafficPolicy == corev1.ServiceExternalTrafficPolicyLocal {
		w = append(w, externalLocal(sp, s.NodePorts)...)
	}
	if p := sp.InternalTrafficPolicy; p != nil && *p == corev1.ServiceInternalTrafficPolicyLocal {
		w = append(w, "internalTrafficPolicy Local is not enforced: pod-to-Service traffic goes through the Octavia load balancer, which cannot prefer node-local endpoints")
	}
	w = append(w, cpoWarnings(svc, s)...)
	for _, p := range sp.Ports {
		if p.AppProtocol != nil {
			w = append(w, "appProtocol "+strconv.Quote(*p.AppProtocol)+" of port "+strconv.Itoa(int(p.Port))+" is ignored: listeners are plain "+string(p.Protocol))
			break
		}
	}
	return w
}

// externalLocal says what externalTrafficPolicy Local does here: node
// ports honour it but masquerade (pods answer through the router, not the
// node), and the floating IP does not honour it but keeps client
// addresses.
func externalLocal(sp *corev1.ServiceSpec, nodePorts bool) []string {
	served := nodePorts && slices.ContainsFunc(sp.Ports, func(p corev1.ServicePort) bool { return p.NodePort != 0 })
	lb := sp.Type == corev1.ServiceTypeLoadBalancer
	switch {
	case served && lb:
		return []string{"externalTrafficPolicy Local: node ports send only to the node's own endpoints but masquerade (client addresses are not preserved on node ports); " +
			"the load balancer's floating IP reaches the endpoints on every node directly, with client addresses preserved"}
	case served:
		return []string{"externalTrafficPolicy Local: node ports send only to the node's own endpoints but masquerade (client addresses are not preserved on node ports)"}
	case lb:
		return []string{"externalTrafficPolicy Local is not enforced: the load balancer's floating IP reaches the endpoints on every node directly, with client addresses preserved"}
	}
	return nil
}
