package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// KuryrNetworkSpec names whose pods get their own Neutron network: a
// namespace's (nsName, pod_subnets_driver = namespace) or a node's
// (nodeName, pod_subnets_driver = node).
type KuryrNetworkSpec struct {
	// NsName is the namespace whose pods use the network. kuryr leaves it
	// empty on a node's KuryrNetwork, and ignores it there.
	// +optional
	NsName string `json:"nsName,omitempty"`
	// NodeName, when set, makes this the network of the pods on that node.
	// A node's KuryrNetwork lives in the controller's namespace, is named
	// node-<node> (NodeNetworkName) and is owned by its Node, so that the garbage
	// collector deletes it (and its finalizer the network) with the node.
	// +optional
	NodeName string `json:"nodeName,omitempty"`
	// ProjectID owns the network, subnet and router interface.
	ProjectID string `json:"projectId"`
}

// KuryrNetworkStatus is the Neutron side of a namespace or a node.
type KuryrNetworkStatus struct {
	// +optional
	NetID string `json:"netId,omitempty"`
	// +optional
	SubnetID string `json:"subnetId,omitempty"`
	// +optional
	SubnetCIDR string `json:"subnetCIDR,omitempty"`
	// RouterID is set once the subnet is attached to the cluster router.
	// +optional
	RouterID string `json:"routerId,omitempty"`
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// KuryrNetwork gives a namespace (`pod_subnets_driver = namespace`) or a
// node (`pod_subnets_driver = node`) its own Neutron network, a subnet from
// the pod subnet pool and an interface on the cluster router.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=kn
// +kubebuilder:printcolumn:name="Node",type=string,JSONPath=`.spec.nodeName`,priority=1
// +kubebuilder:printcolumn:name="Network",type=string,JSONPath=`.status.netId`
// +kubebuilder:printcolumn:name="CIDR",type=string,JSONPath=`.status.subnetCIDR`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type KuryrNetwork struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   KuryrNetworkSpec   `json:"spec"`
	Status KuryrNetworkStatus `json:"status,omitempty"`
}

// KuryrNetworkList is a list of KuryrNetworks.
//
// +kubebuilder:object:root=true
type KuryrNetworkList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []KuryrNetwork `json:"items"`
}

// NodeNetworkName is the name of a node's KuryrNetwork in the controller's
// namespace: deterministic, so that every reader finds it without a list.
// A namespace's KuryrNetwork is named after its namespace, so the two meet
// only if the controller's namespace were itself called node-<node>.
func NodeNetworkName(node string) string { return "node-" + node }

// Ready reports whether the subnet is attached and usable.
func (s *KuryrNetworkStatus) Ready() bool {
	return s.NetID != "" && s.SubnetID != "" && s.RouterID != ""
}
