package conntrack

import (
	"net/netip"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"

	kuryrv1 "github.com/kuryr-k8s/kuryr/api/v1"
)

// Service is what a ready load balancer serves: its addresses (VIP,
// floating IP) and, per listener, the members that may answer.
type Service struct {
	Addrs []netip.Addr
	Ports map[Listener]map[Backend]bool
}

// Listener is a (protocol, port) of a Service; the protocol lower case,
// as dumps print it.
type Listener struct {
	Proto string
	Port  int
}

// Backend is a member's address and port.
type Backend struct {
	Addr netip.Addr
	Port int
}

// Served is what klb's load balancer serves, or nil while it is not ready
// for its current spec or has no member (then the ovn provider has no VIP,
// the refuse port answers, and entries without NAT are what the datapath
// does anyway), and for other providers than ovn (an amphora translates
// nothing in OVN: every connection there looks untranslated). Nothing of
// klb is taken on trust: its VIP must be one of the owning Service's
// ClusterIPs, its floating IP one of the Service's external addresses. Pure.
func Served(klb *kuryrv1.KuryrLoadBalancer, svc *corev1.Service) *Service {
	c := meta.FindStatusCondition(klb.Status.Conditions, kuryrv1.ConditionReady)
	if c == nil || c.Status != "True" || c.ObservedGeneration != klb.Generation || !klb.DeletionTimestamp.IsZero() ||
		!strings.EqualFold(klb.Spec.Provider, "ovn") || !ownedBy(klb, svc) {
		return nil
	}
	s := &Service{Ports: map[Listener]map[Backend]bool{}}
	if slices.Contains(svc.Spec.ClusterIPs, klb.Spec.IP) || svc.Spec.ClusterIP == klb.Spec.IP {
		s.Addrs = appendAddr(s.Addrs, klb.Spec.IP)
	}
	if f := floatingIP(klb); f != "" && slices.Contains(externalAddrs(svc), f) {
		s.Addrs = appendAddr(s.Addrs, f)
	}
	members := 0
	for _, p := range klb.Spec.Ports {
		l := Listener{Proto: strings.ToLower(p.Protocol), Port: int(p.Port)}
		s.Ports[l] = map[Backend]bool{}
		for _, m := range p.Members {
			if ip, err := netip.ParseAddr(m.IP); err == nil {
				s.Ports[l][Backend{Addr: ip, Port: int(m.Port)}] = true
				members++
			}
		}
	}
	if len(s.Addrs) == 0 || members == 0 {
		return nil
	}
	return s
}

func ownedBy(klb *kuryrv1.KuryrLoadBalancer, svc *corev1.Service) bool {
	if svc == nil || svc.Namespace != klb.Namespace || svc.Name != klb.Name {
		return false
	}
	for _, o := range klb.OwnerReferences {
		if o.Kind == "Service" && o.UID == svc.UID {
			return true
		}
	}
	return false
}

// externalAddrs are the Service's addresses outside: its externalIPs and
// the ingress addresses of its status.
func externalAddrs(svc *corev1.Service) []string {
	out := slices.Clone(svc.Spec.ExternalIPs)
	for _, in := range svc.Status.LoadBalancer.Ingress {
		out = append(out, in.IP)
	}
	return out
}

func appendAddr(addrs []netip.Addr, a string) []netip.Addr {
	if ip, err := netip.ParseAddr(a); err == nil {
		return append(addrs, ip)
	}
	return addrs
}

// Stale are the entries that keep connections from the services' load
// balancers: in one of OVN's zones (not zone 0, the node's own), towards
// a service address and port, answered by anything but a member of that
// port (the address itself when nothing translated it), for every Service
// on that address (two claiming one must not cut each other's). Pure.
func Stale(entries []Entry, services []*Service) []Entry {
	byAddr := map[netip.Addr][]*Service{}
	for _, s := range services {
		for _, a := range s.Addrs {
			byAddr[a] = append(byAddr[a], s)
		}
	}
	var out []Entry
	for _, e := range entries {
		if e.Zone == 0 || len(byAddr[e.Orig.Dst]) == 0 {
			continue
		}
		stale := true
		for _, s := range byAddr[e.Orig.Dst] {
			members, ok := s.Ports[Listener{Proto: e.Proto, Port: e.Orig.Dport}]
			if !ok || members[Backend{Addr: e.Reply.Src, Port: e.Reply.Sport}] {
				stale = false
				break
			}
		}
		if stale {
			out = append(out, e)
		}
	}
	return out
}

func floatingIP(klb *kuryrv1.KuryrLoadBalancer) string {
	if f := klb.Status.FloatingIP; f != nil {
		return f.IP
	}
	return ""
}
