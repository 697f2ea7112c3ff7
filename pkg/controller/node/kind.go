package node

import (
	"context"
	"crypto/sha256"
	"fmt"
	"net"
	"net/netip"

	"go4.org/netipx"
	corev1 "k8s.io/api/core/v1"

	kuryrv1 "github.com/kuryr-k8s/kuryr/api/v1"
	"github.com/kuryr-k8s/kuryr/pkg/names"
	"github.com/kuryr-k8s/kuryr/pkg/neutron"
)

// kind is one sort of port kuryr gives every node, announced to the node's
// daemon by an annotation of the Node.
type kind struct {
	// what names the kind in logs and Events; skip is the action of the
	// Event that says a VM node does without it.
	what, skip string
	// annotation is the Node annotation that describes the port.
	annotation string
	// tag marks the node's ports of this kind.
	tag func(node string) string
	// prefix + node name the port and its device.
	prefix, deviceOwner string
	// subnet the ports are on; "" turns the kind off.
	subnet string
	// whileUp: the port is removed while the node is down (DownAfter).
	whileUp bool
	// complete adds to np what the node configures besides the port's
	// addresses, MAC and MTU.
	complete func(ctx context.Context, node *corev1.Node, np kuryrv1.NodePort, sub *neutron.Subnet) (kuryrv1.NodePort, error)
}

// kinds are the node ports: the management port (the node reaches pods
// through it) and the refuse port (clients of ClusterIPs that have no
// load balancer or no endpoint are refused at once through it).
func (r *Reconciler) kinds() []kind {
	return []kind{{
		what: "management port", skip: "SkipManagementPort", annotation: kuryrv1.NodePortAnnotation, tag: names.NodeTag,
		prefix: names.NodePortPrefix, deviceOwner: DeviceOwner, subnet: r.Settings.Subnet,
		complete: func(ctx context.Context, node *corev1.Node, np kuryrv1.NodePort, sub *neutron.Subnet) (kuryrv1.NodePort, error) {
			dests, err := r.destinations(ctx, node)
			if err != nil {
				return np, err
			}
			return withRoutes(np, sub, dests)
		},
	}, {
		what: "refuse port", skip: "SkipRefusePort", annotation: kuryrv1.RefusePortAnnotation, tag: names.RefuseTag,
		prefix: names.RefusePortPrefix, deviceOwner: RefuseDeviceOwner, subnet: r.Settings.RefuseSubnet, whileUp: true,
		complete: func(_ context.Context, _ *corev1.Node, np kuryrv1.NodePort, sub *neutron.Subnet) (kuryrv1.NodePort, error) {
			return refusing(np, sub)
		},
	}}
}

// refusing completes a refuse port: a default route through the service
// subnet's gateway (it answers clients anywhere) and the addresses it
// refuses. Pure.
func refusing(np kuryrv1.NodePort, sub *neutron.Subnet) (kuryrv1.NodePort, error) {
	p, err := netip.ParsePrefix(sub.CIDR)
	if err != nil {
		return np, fmt.Errorf("service subnet %s: bad cidr %q: %w", sub.ID, sub.CIDR, err)
	}
	all := "0.0.0.0/0"
	if p.Addr().Is6() {
		all = "::/0"
	}
	if np, err = withRoutes(np, sub, []string{all}); err != nil {
		return np, err
	}
	np.Refuse, err = refused(p.Masked(), sub)
	if err != nil {
		return np, err
	}
	if len(np.Refuse) == 0 {
		return np, fmt.Errorf("service subnet %s (%s): Neutron's allocation pools cover it all, leaving no address to "+
			"Kubernetes' ClusterIPs: give Kubernetes part of it (--service-cluster-ip-range) outside the pools", sub.ID, sub.CIDR)
	}
	np.AnswerMAC = answerMAC(sub.ID)
	return np, nil
}

// answerMAC is the MAC every node's refuse namespace answers with: one per
// service subnet, locally administered (02:…, outside Neutron's fa:16:3e
// base), unicast. The router keeps the MAC that answered its ARP request
// for a ClusterIP for good (Neutron leaves mac_binding_age_threshold at
// 0): were it one node's port's, the ClusterIP would go silent once that
// port is gone (its node removed, the port replaced). A frame to a MAC no
// port holds goes to the ports that take unknown addresses, the refuse
// ports (port security off), or, once the switch has learnt the MAC from
// one of them, to that one; its deletion unlearns it. Pure.
func answerMAC(subnetID string) string {
	h := sha256.Sum256([]byte("kuryr-refuse/" + subnetID))
	h[0] = 0x02
	return net.HardwareAddr(h[:6]).String()
}

// refused is the subnet minus what Neutron may give its own ports (the
// allocation pools, the gateway) and the network and broadcast
// addresses: the ClusterIPs, as CIDRs. Pure.
func refused(p netip.Prefix, sub *neutron.Subnet) ([]string, error) {
	var b netipx.IPSetBuilder
	b.AddPrefix(p)
	b.Remove(p.Addr())
	if p.Addr().Is4() {
		b.Remove(netipx.PrefixLastIP(p))
	}
	if gw, err := netip.ParseAddr(sub.GatewayIP); err == nil {
		b.Remove(gw)
	}
	for _, r := range sub.Pools {
		first, err1 := netip.ParseAddr(r.Start)
		last, err2 := netip.ParseAddr(r.End)
		if err1 != nil || err2 != nil {
			return nil, fmt.Errorf("service subnet %s: bad allocation pool %s-%s", sub.ID, r.Start, r.End)
		}
		b.RemoveRange(netipx.IPRangeFrom(first, last))
	}
	set, err := b.IPSet()
	if err != nil {
		return nil, err
	}
	var out []string
	for _, q := range set.Prefixes() {
		out = append(out, q.String())
	}
	return out, nil
}
