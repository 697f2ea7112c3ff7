package svcports

import (
	"fmt"
	"net/netip"
	"strings"

	"github.com/google/nftables"
	"github.com/google/nftables/binaryutil"
	"github.com/google/nftables/expr"
	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
)

// MasqueradeMark is the packet mark bit that asks the postrouting chain to
// masquerade a node-port packet. Bit 24: kube-proxy uses 0x4000 (and
// 0x8000 for drops), Weave 0x20000 and 0x40000, Cilium bits 8-11 and
// Calico the upper 16 bits by default; none of them runs beside kuryr, but
// an operator's own marks are likelier in the low bits. The bit is
// cleared again before masquerading, so it never leaves the node's
// netfilter (OVS could otherwise match on it).
const MasqueradeMark uint32 = 0x01000000

// The base chains: prerouting DNATs traffic from elsewhere, output the
// node's own (always as externalTrafficPolicy Cluster, as kube-proxy
// does), postrouting masquerades what carries MasqueradeMark.
const (
	chainPrerouting  = "prerouting"
	chainOutput      = "output"
	chainPostrouting = "postrouting"
)

// program is a Ruleset as nftables objects, in the order they are added.
type program struct {
	chains []*nftables.Chain
	rules  []*nftables.Rule
}

// build turns a ruleset into the table's chains and rules. Pure.
func build(t *nftables.Table, rs Ruleset) program {
	base := func(name string, hook *nftables.ChainHook, prio nftables.ChainPriority) *nftables.Chain {
		return &nftables.Chain{Name: name, Table: t, Type: nftables.ChainTypeNAT, Hooknum: hook, Priority: &prio}
	}
	pre := base(chainPrerouting, nftables.ChainHookPrerouting, *nftables.ChainPriorityNATDest)
	out := base(chainOutput, nftables.ChainHookOutput, *nftables.ChainPriorityNATDest)
	post := base(chainPostrouting, nftables.ChainHookPostrouting, *nftables.ChainPriorityNATSource)
	p := program{chains: []*nftables.Chain{pre, out, post}}
	add := func(c *nftables.Chain, exprs ...[]expr.Any) {
		p.rules = append(p.rules, &nftables.Rule{Table: t, Chain: c, Exprs: concat(exprs...)})
	}
	for _, np := range rs.Ports {
		toCluster := concat(markMasquerade(), dnat(np.Target))
		add(out, match(np), toCluster)
		if !np.Local {
			add(pre, match(np), toCluster)
			continue
		}
		c := &nftables.Chain{Name: localChain(np), Table: t}
		p.chains = append(p.chains, c)
		add(pre, match(np), []expr.Any{&expr.Verdict{Kind: expr.VerdictGoto, Chain: c.Name}})
		if len(np.Endpoints) == 0 {
			add(c, []expr.Any{&expr.Verdict{Kind: expr.VerdictDrop}})
		}
		for i, ep := range np.Endpoints {
			add(c, pick(len(np.Endpoints)-i), markMasquerade(), dnat(ep))
		}
	}
	add(post, masquerade())
	return p
}

// localChain names the chain that spreads a Local node port over this
// node's endpoints: the protocol and node port make it unique.
func localChain(np NodePort) string {
	return fmt.Sprintf("local-%s-%d", strings.ToLower(string(np.Protocol)), np.Port)
}

func concat(parts ...[]expr.Any) []expr.Any {
	var out []expr.Any
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

// match is `fib daddr type local meta nfproto <family> <daddr not
// loopback> meta l4proto <proto> th dport <port>`: the node port on any of
// the node's addresses (not localhost: the kernel would not route the
// DNATed packet out without route_localnet), of the target's family
// (there is no NAT between families).
func match(np NodePort) []expr.Any {
	nfproto, notLoopback := byte(unix.NFPROTO_IPV4), []expr.Any{
		&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseNetworkHeader, Offset: 16, Len: 4},
		&expr.Bitwise{SourceRegister: 1, DestRegister: 1, Len: 4, Mask: []byte{255, 0, 0, 0}, Xor: []byte{0, 0, 0, 0}},
		&expr.Cmp{Op: expr.CmpOpNeq, Register: 1, Data: []byte{127, 0, 0, 0}},
	}
	if np.Target.Addr().Is6() {
		nfproto, notLoopback = unix.NFPROTO_IPV6, []expr.Any{
			&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseNetworkHeader, Offset: 24, Len: 16},
			&expr.Cmp{Op: expr.CmpOpNeq, Register: 1, Data: netip.IPv6Loopback().AsSlice()},
		}
	}
	return concat([]expr.Any{
		&expr.Fib{Register: 1, FlagDADDR: true, ResultADDRTYPE: true},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: binaryutil.NativeEndian.PutUint32(unix.RTN_LOCAL)},
		&expr.Meta{Key: expr.MetaKeyNFPROTO, Register: 1},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: []byte{nfproto}},
	}, notLoopback, []expr.Any{
		&expr.Meta{Key: expr.MetaKeyL4PROTO, Register: 1},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: []byte{l4proto(np.Protocol)}},
		&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseTransportHeader, Offset: 2, Len: 2},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: binaryutil.BigEndian.PutUint16(np.Port)},
	})
}

func l4proto(p corev1.Protocol) byte {
	switch p {
	case corev1.ProtocolUDP:
		return unix.IPPROTO_UDP
	case corev1.ProtocolSCTP:
		return unix.IPPROTO_SCTP
	}
	return unix.IPPROTO_TCP
}

// markMasquerade is `meta mark set meta mark | MasqueradeMark`.
func markMasquerade() []expr.Any {
	return []expr.Any{
		&expr.Meta{Key: expr.MetaKeyMARK, Register: 1},
		&expr.Bitwise{SourceRegister: 1, DestRegister: 1, Len: 4,
			Mask: binaryutil.NativeEndian.PutUint32(^MasqueradeMark), Xor: binaryutil.NativeEndian.PutUint32(MasqueradeMark)},
		&expr.Meta{Key: expr.MetaKeyMARK, SourceRegister: true, Register: 1},
	}
}

// dnat is `dnat ip|ip6 to <address>:<port>`.
func dnat(to netip.AddrPort) []expr.Any {
	family := uint32(unix.NFPROTO_IPV4)
	if to.Addr().Is6() {
		family = unix.NFPROTO_IPV6
	}
	return []expr.Any{
		&expr.Immediate{Register: 1, Data: to.Addr().AsSlice()},
		&expr.Immediate{Register: 2, Data: binaryutil.BigEndian.PutUint16(to.Port())},
		&expr.NAT{Type: expr.NATTypeDestNAT, Family: family, RegAddrMin: 1, RegProtoMin: 2, Specified: true},
	}
}

// pick matches one packet in n at random (`numgen random mod n == 0`;
// nothing when n is 1). The k-th of n endpoints is tried with 1/(n-k):
// each gets 1/n, as kube-proxy's iptables statistic rules do. Unlike
// `meta mark set numgen random mod n`, it leaves the packet's mark (and
// the masquerade bit in it) alone.
func pick(n int) []expr.Any {
	if n <= 1 {
		return nil
	}
	return []expr.Any{
		&expr.Numgen{Register: 1, Modulus: uint32(n), Type: unix.NFT_NG_RANDOM},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: binaryutil.NativeEndian.PutUint32(0)},
	}
}

// masquerade is `meta mark & MasqueradeMark != 0 meta mark set meta mark &
// ~MasqueradeMark masquerade`.
func masquerade() []expr.Any {
	return []expr.Any{
		&expr.Meta{Key: expr.MetaKeyMARK, Register: 1},
		&expr.Bitwise{SourceRegister: 1, DestRegister: 1, Len: 4,
			Mask: binaryutil.NativeEndian.PutUint32(MasqueradeMark), Xor: binaryutil.NativeEndian.PutUint32(0)},
		&expr.Cmp{Op: expr.CmpOpNeq, Register: 1, Data: binaryutil.NativeEndian.PutUint32(0)},
		&expr.Meta{Key: expr.MetaKeyMARK, Register: 1},
		&expr.Bitwise{SourceRegister: 1, DestRegister: 1, Len: 4,
			Mask: binaryutil.NativeEndian.PutUint32(^MasqueradeMark), Xor: binaryutil.NativeEndian.PutUint32(0)},
		&expr.Meta{Key: expr.MetaKeyMARK, SourceRegister: true, Register: 1},
		&expr.Masq{},
	}
}
