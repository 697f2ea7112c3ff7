// Package conntrack keeps the node's connection tracker from holding
// Service connections to a load balancer that no longer stands behind
// them. OVN commits a connection through a pod's (or VM's) security group
// whether or not a load balancer translated it: a TCP SYN or a UDP
// datagram sent to a ClusterIP before its load balancer serves it (no
// load balancer yet, or no member) leaves an entry without NAT, and every
// retransmission, or every datagram from the same source port, then
// matches it instead of reaching the load balancer, until the entry
// expires (a UDP client that keeps sending never recovers). Likewise a UDP
// flow stays translated to a backend that is gone. kube-proxy clears
// these entries itself; here kuryr-daemon does, on every node, for every
// Service whose load balancer is ready: an entry of OVN's towards a VIP
// (or the VIP's floating IP) on a Service port whose reply does not come
// from a current member is deleted, so the next packet is balanced anew.
package conntrack

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"
)

// Entry is one connection as ovs-vswitchd's dpctl/dump-conntrack prints
// it: "tcp,orig=(src=..,dst=..,sport=..,dport=..),reply=(...),zone=N,...".
type Entry struct {
	Proto string // tcp, udp, sctp
	Zone  int
	Orig  Tuple
	Reply Tuple
}

// Tuple is one direction of an entry.
type Tuple struct {
	Src, Dst     netip.Addr
	Sport, Dport int
}

// Parse reads the lines of a dump, keeping the TCP, UDP and SCTP entries
// it understands (others, ICMP among them, are skipped). Pure.
func Parse(dump string) []Entry {
	var out []Entry
	for _, line := range strings.Split(dump, "\n") {
		if e, ok := parseLine(strings.TrimSpace(line)); ok {
			out = append(out, e)
		}
	}
	return out
}

func parseLine(line string) (Entry, bool) {
	proto, rest, ok := strings.Cut(line, ",")
	if !ok || (proto != "tcp" && proto != "udp" && proto != "sctp") {
		return Entry{}, false
	}
	e := Entry{Proto: proto}
	orig, ok1 := section(rest, "orig=(")
	reply, ok2 := section(rest, "reply=(")
	if !ok1 || !ok2 {
		return Entry{}, false
	}
	var err error
	if e.Orig, err = tuple(orig); err != nil {
		return Entry{}, false
	}
	if e.Reply, err = tuple(reply); err != nil {
		return Entry{}, false
	}
	if i := strings.Index(rest, "zone="); i >= 0 {
		z := rest[i+len("zone="):]
		if j := strings.IndexByte(z, ','); j >= 0 {
			z = z[:j]
		}
		if e.Zone, err = strconv.Atoi(z); err != nil {
			return Entry{}, false
		}
	}
	return e, true
}

func section(s, prefix string) (string, bool) {
	i := strings.Index(s, prefix)
	if i < 0 {
		return "", false
	}
	s = s[i+len(prefix):]
	j := strings.IndexByte(s, ')')
	if j < 0 {
		return "", false
	}
	return s[:j], true
}

func tuple(s string) (Tuple, error) {
	var t Tuple
	for _, kv := range strings.Split(s, ",") {
		k, v, _ := strings.Cut(kv, "=")
		var err error
		switch k {
		case "src":
			t.Src, err = netip.ParseAddr(v)
		case "dst":
			t.Dst, err = netip.ParseAddr(v)
		case "sport":
			t.Sport, err = strconv.Atoi(v)
		case "dport":
			t.Dport, err = strconv.Atoi(v)
		}
		if err != nil {
			return t, err
		}
	}
	if !t.Src.IsValid() || !t.Dst.IsValid() {
		return t, fmt.Errorf("incomplete tuple %q", s)
	}
	return t, nil
}

// FlushArgs are the dpctl/flush-conntrack arguments that delete exactly e.
func (e Entry) FlushArgs() []string {
	p := map[string]int{"tcp": 6, "udp": 17, "sctp": 132}[e.Proto]
	fam := "nw"
	if e.Orig.Src.Is6() {
		fam = "ipv6"
	}
	return []string{"zone=" + strconv.Itoa(e.Zone), fmt.Sprintf("ct_%s_src=%s,ct_%s_dst=%s,ct_nw_proto=%d,ct_tp_src=%d,ct_tp_dst=%d",
		fam, e.Orig.Src, fam, e.Orig.Dst, p, e.Orig.Sport, e.Orig.Dport)}
}
