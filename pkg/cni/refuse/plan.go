// Package refuse plugs a node's refuse port, which kuryr-controller creates
// on the service network and announces on the Node (annotation
// kuryr.openstack.org/refuse-port), into a network namespace of the
// daemon's own, where every ClusterIP is a local address and nothing
// listens: the router's ARP requests for a ClusterIP that has no load
// balancer yet, or no endpoint (the ovn provider then has no VIP for it),
// reach it, and the client gets a TCP reset or an ICMP port unreachable
// at once, instead of a silence that leaves a connection-tracking entry
// without NAT behind (see package conntrack). The namespace lives as long
// as the daemon: a restarted daemon makes a new one. The same agent plugs
// the controller's address-group probe port (ProbePort,
// kuryr.openstack.org/address-group-probe-port) into a namespace of its
// own, where nothing listens on its own address.
package refuse

import (
	"fmt"
	"net"

	kuryrv1 "github.com/kuryr-k8s/kuryr/api/v1"
	"github.com/kuryr-k8s/kuryr/pkg/cni/nodeport"
	"github.com/kuryr-k8s/kuryr/pkg/names"
)

// Plan is what the namespace is given: the port, a default route through
// its subnet's gateway, and the refused prefixes, all checked.
type Plan struct {
	*nodeport.Plan
	Gateway net.IP
	Refuse  []*net.IPNet
	// Answer is the MAC of the interface in the namespace: the annotation's
	// answer MAC (the same on every node) for a refuse port, else the
	// port's own.
	Answer net.HardwareAddr
	hostIf string
}

// NewPlan checks the refuse port another component wrote: a port like the
// management port, one default route through a gateway on its subnet,
// and refused prefixes that leave the port's own address and the gateway
// out. Pure.
func NewPlan(np kuryrv1.NodePort) (*Plan, error) {
	p, err := routed(np, names.RefuseInterface)
	if err != nil {
		return nil, err
	}
	for _, c := range np.Refuse {
		_, n, err := net.ParseCIDR(c)
		if err != nil {
			return nil, fmt.Errorf("refused prefix %q: %w", c, err)
		}
		for _, own := range append([]net.IP{p.Gateway}, addrIPs(p.Addrs)...) {
			if n.Contains(own) {
				return nil, fmt.Errorf("refused prefix %s holds %s, the port's own or its gateway", n, own)
			}
		}
		p.Refuse = append(p.Refuse, n)
	}
	if len(p.Refuse) == 0 {
		return nil, fmt.Errorf("port %s refuses no address", np.PortID)
	}
	if np.AnswerMAC != "" {
		mac, err := net.ParseMAC(np.AnswerMAC)
		if err != nil || len(mac) != 6 || mac[0]&1 == 1 {
			return nil, fmt.Errorf("answer MAC %q is not a unicast Ethernet address", np.AnswerMAC)
		}
		p.Answer = mac
	}
	return p, nil
}

// NewProbePlan checks the probe port another component wrote: a port like
// the refuse port that refuses nothing but its own address (the kernel
// resets a connection to any port of it). Pure.
func NewProbePlan(np kuryrv1.NodePort) (*Plan, error) {
	if len(np.Refuse) > 0 {
		return nil, fmt.Errorf("probe port %s refuses %v: it answers for its own address only", np.PortID, np.Refuse)
	}
	return routed(np, names.ProbeInterface)
}

// routed checks a port with one default route through a gateway on its
// subnet. Pure.
func routed(np kuryrv1.NodePort, hostIf string) (*Plan, error) {
	base, err := nodeport.NewPortPlan(np)
	if err != nil {
		return nil, err
	}
	p := &Plan{Plan: base, Answer: base.MAC, hostIf: hostIf}
	if len(np.Routes) != 1 {
		return nil, fmt.Errorf("want one default route, got %d routes", len(np.Routes))
	}
	_, dst, err := net.ParseCIDR(np.Routes[0].Destination)
	if ones, _ := maskSize(dst); err != nil || ones != 0 {
		return nil, fmt.Errorf("route %q is not a default route", np.Routes[0].Destination)
	}
	if p.Gateway = net.ParseIP(np.Routes[0].Gateway); !p.OnSubnet(p.Gateway) {
		return nil, fmt.Errorf("gateway %q is not on the port's subnet", np.Routes[0].Gateway)
	}
	return p, nil
}

func maskSize(n *net.IPNet) (int, int) {
	if n == nil {
		return -1, 0
	}
	return n.Mask.Size()
}

func addrIPs(addrs []*net.IPNet) []net.IP {
	out := make([]net.IP, 0, len(addrs))
	for _, a := range addrs {
		out = append(out, a.IP)
	}
	return out
}

// HostIf is the host end of the port's veth, names.RefuseInterface or
// names.ProbeInterface: one per node, named for what it is (as the node
// port's kuryr-mgmt), not tap<port id> as a pod's, so that nothing mistakes
// it for a pod's leftover interface.
func (p *Plan) HostIf() string { return p.hostIf }
