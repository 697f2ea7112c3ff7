package v1

// NodePortAnnotation is the Node annotation through which kuryr-controller
// tells a node's kuryr-daemon about the node's management port: a Neutron
// port bound to the node, on a network routed to the pod and service
// subnets, that the daemon plugs into the node's integration bridge so that
// the node (the kubelet's probes above all) reaches pods without NAT. Its
// value is a NodePort in JSON.
const NodePortAnnotation = "kuryr.openstack.org/node-port"

// RefusePortAnnotation is the Node annotation through which
// kuryr-controller tells a node's kuryr-daemon about the node's refuse
// port: a Neutron port on the service network, bound to the node, without
// port security, that the daemon plugs into a network namespace of its
// own where every address of Refuse is local and nothing listens. The
// router's ARP requests for a ClusterIP that has no load balancer yet, or
// no endpoint (the ovn provider then has no VIP for it), reach it, and
// clients get a TCP reset or an ICMP port unreachable at once instead of
// silence, as kube-proxy rejects them. Its value is a NodePort in JSON,
// with a default route through the service subnet's gateway.
const RefusePortAnnotation = "kuryr.openstack.org/refuse-port"

// ProbePortAnnotation is the Node annotation through which kuryr-controller
// asks the node's kuryr-daemon to plug the address-group probe port: a
// Neutron port on the pod subnet, bound to the node, whose security group
// admits the probe's TCP port only from an address group. The daemon plugs
// it into a network namespace of its own where nothing listens (a
// connection to it is reset at once, if the rules let it through), as
// the refuse port. The controller connects to it from its own node,
// first while the address group holds every address and then while it
// holds none: a reset both times means Neutron ignores the rule's remote
// address group. Its value is a NodePort in JSON, with a default route
// through the subnet's gateway and no Refuse. The controller removes it
// once it has its answer.
const ProbePortAnnotation = "kuryr.openstack.org/address-group-probe-port"

// NodePort is a node's management port, as the node must configure it.
//
// +kubebuilder:object:generate=false
type NodePort struct {
	PortID     string `json:"portId"`
	MACAddress string `json:"macAddress"`
	// IPs with their prefix lengths, e.g. 10.11.0.5/24.
	IPs []string `json:"ips"`
	MTU int      `json:"mtu"`
	// Routes to the pod and service subnets, via the subnet's router.
	Routes []Route `json:"routes"`
	// Refuse are the CIDRs a refuse port answers for (the ClusterIPs):
	// its subnet minus Neutron's allocation pools and gateway.
	Refuse []string `json:"refuse,omitempty"`
	// AnswerMAC is the MAC a refuse port answers with inside the node's
	// refuse namespace: the same on every node of the cluster (derived from
	// the service subnet), so that the router's ARP entries for ClusterIPs
	// (which never age by default) outlive any one node's port. Empty: the
	// port's own MAC.
	AnswerMAC string `json:"answerMac,omitempty"`
}
