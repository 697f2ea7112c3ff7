package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// DefaultInterface is the pod interface the default VIF is plugged as: the
// key of status.vifs for the pod's main port.
const DefaultInterface = "eth0"

// HostIfName is the host-side interface of a port: "tap" and the first 11
// characters of its id, as Nova, os-vif and the original kuryr name it (15
// characters, the kernel's limit).
func HostIfName(portID string) string {
	if len(portID) > 11 {
		portID = portID[:11]
	}
	return "tap" + portID
}

// KuryrPortSpec identifies the pod a KuryrPort networks.
type KuryrPortSpec struct {
	// PodUID is the UID of the pod; a pod recreated with the same name gets a
	// new KuryrPort and a new Neutron port.
	PodUID string `json:"podUid"`
	// PodNodeName is the node the pod is scheduled on; the port is bound to it.
	PodNodeName string `json:"podNodeName"`
	// PodStatic is true for static (mirror) pods, whose UID as seen by the
	// kubelet differs from the API's.
	// +optional
	PodStatic bool `json:"podStatic,omitempty"`
	// KubeletPodUID is the UID the kubelet gives the container runtime for
	// a static pod (its config hash, the mirror pod's
	// kubernetes.io/config.mirror annotation): the node matches CNI
	// requests by it.
	// +optional
	KubeletPodUID string `json:"kubeletPodUid,omitempty"`
}

// IPAddress is one of a port's addresses on a subnet.
type IPAddress struct {
	// Address in CIDR notation with the subnet's prefix, e.g. 10.10.0.5/24.
	Address  string `json:"address"`
	SubnetID string `json:"subnetId"`
}

// Route is a route the pod must install.
type Route struct {
	Destination string `json:"destination"`
	Gateway     string `json:"gateway"`
}

// VIF is everything a node needs to plug a pod into its Neutron port.
type VIF struct {
	PortID     string `json:"portId"`
	MACAddress string `json:"macAddress"`
	NetworkID  string `json:"networkId"`
	// IPs with their prefix lengths.
	IPs []IPAddress `json:"ips"`
	// Gateway is the default gateway (the subnet's), empty if none.
	// +optional
	Gateway string `json:"gateway,omitempty"`
	// +optional
	Routes []Route `json:"routes,omitempty"`
	// +optional
	DNS []string `json:"dns,omitempty"`
	MTU int      `json:"mtu"`
	// VIFType is Neutron's binding:vif_type, e.g. "ovs".
	VIFType string `json:"vifType"`
	// Bridge is the integration bridge Neutron bound the port to, e.g.
	// "br-int". For people reading the object: nodes plug into the bridge
	// of their own configuration.
	// +optional
	Bridge string `json:"bridge,omitempty"`
	// VIFName is the host-side interface name, HostIfName(PortID). For
	// people reading the object: nodes derive the name themselves.
	VIFName string `json:"vifName"`
	// Default marks the interface that carries the default route (eth0).
	Default bool `json:"default"`
	// Active is true once Neutron reports the port ACTIVE (nested-macvlan:
	// the VM's port, as the pod's port is never bound).
	Active bool `json:"active"`
	// Nested is set for pods of nodes that are VMs of the cloud: how the
	// pod's port reaches the VM's NIC.
	// +optional
	Nested *NestedVIF `json:"nested,omitempty"`
}

// PodVIFLabel on a Node says how its pods are plugged, overriding
// [kubernetes] pod_vif_driver for that node (as the original's pod_vif
// node label did): neutron-vif (the node is a hypervisor), nested-vlan or
// nested-macvlan (the node is a VM of the cloud).
const PodVIFLabel = "kuryr.openstack.org/pod-vif"

// Nested modes: the pod's port is a subport of the VM's trunk with a VLAN
// id, or an allowed address pair of the VM's port.
const (
	NestedVLAN    = "vlan"
	NestedMacvlan = "macvlan"
)

// NestedVIF is where a nested pod's port sits on its VM.
type NestedVIF struct {
	// Mode is vlan (a subport of the VM's trunk) or macvlan (an allowed
	// address pair of the VM's port).
	// +kubebuilder:validation:Enum=vlan;macvlan
	Mode string `json:"mode"`
	// ParentPortID is the VM's port.
	ParentPortID string `json:"parentPortId"`
	// TrunkID is the VM's trunk (vlan).
	// +optional
	TrunkID string `json:"trunkId,omitempty"`
	// VLANID is the subport's segmentation id (vlan).
	// +optional
	VLANID int `json:"vlanId,omitempty"`
}

// KuryrPortStatus is what the controller observed and created in Neutron.
type KuryrPortStatus struct {
	// VIFs by interface name in the pod (eth0, ...).
	// +optional
	VIFs map[string]VIF `json:"vifs,omitempty"`
	// SecurityGroups are the security groups kuryr added to the pod's port
	// beyond [neutron_defaults] pod_security_groups (those of the
	// LoadBalancer Services the pod serves), as last applied.
	// +optional
	SecurityGroups []string `json:"securityGroups,omitempty"`
	// SecurityGroupsApplied: the port carries exactly SecurityGroups (false
	// while a change is under way: SecurityGroups then names every group
	// the port may carry).
	// +optional
	SecurityGroupsApplied bool `json:"securityGroupsApplied,omitempty"`
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// KuryrPort is the Neutron side of one pod: created by kuryr-controller
// for every scheduled pod that is not on the host network, and read by the
// kuryr-daemon of the pod's node to plug it.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=kp
// +kubebuilder:printcolumn:name="Node",type=string,JSONPath=`.spec.podNodeName`
// +kubebuilder:printcolumn:name="Port",type=string,JSONPath=`.status.vifs.eth0.portId`
// +kubebuilder:printcolumn:name="IP",type=string,JSONPath=`.status.vifs.eth0.ips[0].address`
// +kubebuilder:printcolumn:name="Active",type=boolean,JSONPath=`.status.vifs.eth0.active`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type KuryrPort struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   KuryrPortSpec   `json:"spec"`
	Status KuryrPortStatus `json:"status,omitempty"`
}

// KuryrPortList is a list of KuryrPorts.
//
// +kubebuilder:object:root=true
type KuryrPortList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []KuryrPort `json:"items"`
}

// DefaultVIF returns the VIF carrying the default route, if any.
func (s *KuryrPortStatus) DefaultVIF() (VIF, bool) {
	for _, v := range s.VIFs {
		if v.Default {
			return v, true
		}
	}
	return VIF{}, false
}
