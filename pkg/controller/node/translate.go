package node

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"sort"
	"time"

	kuryrv1 "github.com/kuryr-k8s/kuryr/api/v1"
	"github.com/kuryr-k8s/kuryr/pkg/clusternet"
	"github.com/kuryr-k8s/kuryr/pkg/names"
	"github.com/kuryr-k8s/kuryr/pkg/neutron"
)

// DeviceOwner marks nodes' management ports.
const DeviceOwner = "compute:kuryr-node"

// RefuseDeviceOwner marks nodes' refuse ports.
const RefuseDeviceOwner = "compute:kuryr-refuse"

// Settings are the parts of kuryr.conf this reconciler uses.
type Settings struct {
	Cluster, ProjectID string
	// Subnet is [neutron_defaults] node_subnet.
	Subnet string
	// RefuseSubnet is the service subnet when ClusterIPs without a load
	// balancer or an endpoint are refused ("": they are not).
	RefuseSubnet string
	ExtraTags    []string
	// Networks are the cluster's networks, which the node reaches
	// through its management port.
	Networks func(ctx context.Context) (clusternet.Networks, error)
	// BindTimeout: a port still unbound this long after its creation will
	// never be bound, and is replaced.
	BindTimeout time.Duration
	// PodVIFDriver is [kubernetes] pod_vif_driver: VM nodes (nested
	// modes, or the node's label) get no port of either kind, as nothing
	// can be bound to them.
	PodVIFDriver string
	// Pools: [kubernetes] vif_pool_driver = neutron; nested-macvlan VM
	// nodes get no pool (a Warning Event says so).
	Pools bool
}

// portSpec is the port of kind k of a node. Pure.
func (k kind) portSpec(node string, sub *neutron.Subnet, s Settings) neutron.PortSpec {
	return neutron.PortSpec{
		Name: k.prefix + node, NetworkID: sub.NetworkID, SubnetID: sub.ID, ProjectID: s.ProjectID,
		HostID: node, DeviceID: k.prefix + node, DeviceOwner: k.deviceOwner, NoPortSecurity: true,
		Tags: append([]string{names.ClusterTag(s.Cluster), k.tag(node)}, s.ExtraTags...),
	}
}

// fromPort is what the node must configure for port p on subnet sub: its
// addresses (with the subnet's prefix length) and MAC. Pure.
func fromPort(p *neutron.Port, sub *neutron.Subnet) (kuryrv1.NodePort, error) {
	np := kuryrv1.NodePort{PortID: p.ID, MACAddress: p.MACAddress}
	_, cidr, err := net.ParseCIDR(sub.CIDR)
	if err != nil {
		return np, fmt.Errorf("node subnet %s: bad cidr %q: %w", sub.ID, sub.CIDR, err)
	}
	ones, _ := cidr.Mask.Size()
	for _, ip := range p.FixedIPs {
		if ip.SubnetID == sub.ID {
			np.IPs = append(np.IPs, fmt.Sprintf("%s/%d", ip.IPAddress, ones))
		}
	}
	if len(np.IPs) == 0 {
		return np, fmt.Errorf("port %s has no address on the node subnet %s", p.ID, sub.ID)
	}
	return np, nil
}

// withRoutes completes np with a route to each destination through the
// subnet's gateway (the router). Pure.
func withRoutes(np kuryrv1.NodePort, sub *neutron.Subnet, destinations []string) (kuryrv1.NodePort, error) {
	if sub.GatewayIP == "" {
		return np, fmt.Errorf("subnet %s has no gateway: attach it to the pods' router", sub.ID)
	}
	np.Routes = nil
	dests := append([]string(nil), destinations...)
	sort.Strings(dests)
	for _, d := range dests {
		np.Routes = append(np.Routes, kuryrv1.Route{Destination: d, Gateway: sub.GatewayIP})
	}
	return np, nil
}

// recorded returns the port the node's annotation names (kuryr-controller
// is its only writer), if it names one.
func recorded(annotations map[string]string, annotation string) (kuryrv1.NodePort, bool) {
	var np kuryrv1.NodePort
	raw, ok := annotations[annotation]
	if !ok || json.Unmarshal([]byte(raw), &np) != nil || np.PortID == "" || len(np.IPs) == 0 {
		return np, false
	}
	return np, true
}
