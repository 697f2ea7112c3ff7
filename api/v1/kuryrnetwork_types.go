package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// KuryrNetworkSpec names the namespace that gets its own Neutron network.
type KuryrNetworkSpec struct {
	NsName string `json:"nsName"`
	// ProjectID owns the network, subnet and router interface.
	ProjectID string `json:"projectId"`
}

// KuryrNetworkStatus is the Neutron side of a namespace.
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

// KuryrNetwork gives a namespace its own Neutron network, a subnet from the
// pod subnet pool and an interface on the cluster router (namespace
// isolation, `pod_subnets_driver = namespace`).
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=kn
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

// Ready reports whether the namespace's subnet is attached and usable.
func (s *KuryrNetworkStatus) Ready() bool {
	return s.NetID != "" && s.SubnetID != "" && s.RouterID != ""
}
