package conntrack

import (
	"net/netip"
	"strings"

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
// for its current spec or has no member: then the ovn provider has no
// VIP, the refuse port answers, and entries without NAT are what the
// datapath does anyway. Pure.
func Served(klb *kuryrv1.KuryrLoadBalancer) *Service {
	c := meta.FindStatusCondition(klb.Status.Conditions, kuryrv1.ConditionReady)
	if c == nil || c.Status != "True" || c.ObservedGeneration != klb.Generation || !klb.DeletionTimestamp.IsZero() {
		return nil
	}
	s := &Service{Ports: map[Listener]map[Backend]bool{}}
	for _, a := range []string{klb.Spec.IP, floatingIP(klb)} {
		if ip, err := netip.ParseAddr(a); err == nil {
			s.Addrs = append(s.Addrs, ip)
		}
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

func floatingIP(klb *kuryrv1.KuryrLoadBalancer) string {
	if f := klb.Status.FloatingIP; f != nil {
		return f.IP
	}
	return ""
}

// Stale are the entries that keep connections from the services' load
// balancers: in one of OVN's zones (not zone 0, the node's own), towards
// a service address and port, answered by anything but a member of that
// port (the address itself when nothing translated it). Pure.
func Stale(entries []Entry, services []*Service) []Entry {
	byAddr := map[netip.Addr][]*Service{}
	for _, s := range services {
		for _, a := range s.Addrs {
			byAddr[a] = append(byAddr[a], s)
		}
	}
	var out []Entry
	for _, e := range entries {
		if e.Zone == 0 {
			continue
		}
		for _, s := range byAddr[e.Orig.Dst] {
			members, ok := s.Ports[Listener{Proto: e.Proto, Port: e.Orig.Dport}]
			if ok && !members[Backend{Addr: e.Reply.Src, Port: e.Reply.Sport}] {
				out = append(out, e)
				break
			}
		}
	}
	return out
}
