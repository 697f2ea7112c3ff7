package kuryrport

import (
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"

	kuryrv1 "github.com/kuryr-k8s/kuryr/api/v1"
	"github.com/kuryr-k8s/kuryr/pkg/names"
	"github.com/kuryr-k8s/kuryr/pkg/neutron"
)

// DeviceOwner marks pod ports, as in the original (kuryr-lib's constant).
const DeviceOwner = "compute:kuryr"

// Settings are the parts of kuryr.conf the KuryrPort reconciler uses.
type Settings struct {
	Cluster        string
	ProjectID      string
	SecurityGroups []string
	ExtraTags      []string
	PortDebug      bool
	Bridge         string
	// MTUCap caps the network's MTU when positive (network_device_mtu).
	MTUCap int
	// BindTimeout: a port still unbound this long after its creation will
	// never be bound (Neutron died while creating it) and is replaced.
	BindTimeout time.Duration
	// Nested: the pod's node is a VM; its port is not bound to a host (a
	// subport inherits its trunk's binding, a pair's port is never bound)
	// and has no device_id (Neutron refuses a subport that has one, 409
	// PortInUse).
	Nested bool
	// PodVIFDriver is [kubernetes] pod_vif_driver, the nodes' default mode.
	PodVIFDriver string
}

// Target is the network and subnet a pod's port goes on.
type Target struct{ NetworkID, SubnetID string }

// portSpec is the port a KuryrPort asks for. Pure: the same KuryrPort and
// target always give the same request.
func portSpec(kp *kuryrv1.KuryrPort, t Target, s Settings) neutron.PortSpec {
	name := ""
	if s.PortDebug {
		name = kp.Namespace + "/" + kp.Name
	}
	tags := append([]string{names.ClusterTag(s.Cluster), names.PodTag(kp.Spec.PodUID)}, s.ExtraTags...)
	host, device := kp.Spec.PodNodeName, kp.Spec.PodUID
	if s.Nested {
		host, device = "", ""
	}
	return neutron.PortSpec{
		Name: name, NetworkID: t.NetworkID, SubnetID: t.SubnetID, ProjectID: s.ProjectID,
		HostID: host, DeviceID: device, DeviceOwner: DeviceOwner,
		SecurityGroups: s.SecurityGroups, Tags: tags,
	}
}

// vifFor turns a Neutron port, its subnets and its network into what the node
// needs to plug it. Pure; subnets are looked up by id.
func vifFor(p *neutron.Port, subnetsByID map[string]*neutron.Subnet, mtu int, s Settings) (kuryrv1.VIF, error) {
	v := kuryrv1.VIF{
		PortID: p.ID, MACAddress: p.MACAddress, NetworkID: p.NetworkID,
		VIFType: p.VIFType, Bridge: s.Bridge, VIFName: kuryrv1.HostIfName(p.ID),
		Default: true, Active: p.Status == "ACTIVE", MTU: mtu,
	}
	if s.MTUCap > 0 && s.MTUCap < v.MTU {
		v.MTU = s.MTUCap
	}
	if b, ok := p.VIFDetails["bridge_name"].(string); ok && b != "" {
		v.Bridge = b
	}
	for _, ip := range p.FixedIPs {
		sub, ok := subnetsByID[ip.SubnetID]
		if !ok {
			return v, fmt.Errorf("port %s: no details for its subnet %s", p.ID, ip.SubnetID)
		}
		_, cidr, err := net.ParseCIDR(sub.CIDR)
		if err != nil {
			return v, fmt.Errorf("subnet %s: bad cidr %q: %w", sub.ID, sub.CIDR, err)
		}
		ones, _ := cidr.Mask.Size()
		v.IPs = append(v.IPs, kuryrv1.IPAddress{Address: fmt.Sprintf("%s/%d", ip.IPAddress, ones), SubnetID: sub.ID})
		if v.Gateway == "" && sub.GatewayIP != "" {
			v.Gateway = sub.GatewayIP
		}
		for _, r := range sub.HostRoutes {
			v.Routes = append(v.Routes, kuryrv1.Route{Destination: r.Destination, Gateway: r.NextHop})
		}
		v.DNS = appendNew(v.DNS, sub.DNS...)
	}
	if len(v.IPs) == 0 {
		return v, fmt.Errorf("port %s has no fixed IPs", p.ID)
	}
	return v, nil
}

func appendNew(list []string, items ...string) []string {
	for _, it := range items {
		found := false
		for _, l := range list {
			found = found || l == it
		}
		if !found {
			list = append(list, it)
		}
	}
	return list
}

// portFromVIF rebuilds what vifFor needs of a port from a VIF: a pooled
// port returning to its pool after a restart is known only by its VIF.
func portFromVIF(v kuryrv1.VIF) neutron.Port {
	var p neutron.Port
	p.ID, p.MACAddress, p.NetworkID, p.Status = v.PortID, v.MACAddress, v.NetworkID, "DOWN"
	p.VIFType = v.VIFType
	if v.Bridge != "" {
		p.VIFDetails = map[string]any{"bridge_name": v.Bridge}
	}
	for _, ip := range v.IPs {
		addr, _, _ := strings.Cut(ip.Address, "/")
		p.FixedIPs = append(p.FixedIPs, ports.IP{SubnetID: ip.SubnetID, IPAddress: addr})
	}
	return p
}
