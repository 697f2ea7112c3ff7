package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// KuryrNetworkPolicySpec is a NetworkPolicy as kuryr computed it: the
// directions it isolates and the rules of its security group.
type KuryrNetworkPolicySpec struct {
	// PodSelector is the policy's, for display and for finding its pods.
	PodSelector metav1.LabelSelector `json:"podSelector"`
	// Ingress and Egress: the selected pods are isolated that way.
	// +optional
	Ingress bool `json:"ingress,omitempty"`
	// +optional
	Egress bool `json:"egress,omitempty"`
	// +optional
	Rules []PolicyRule `json:"rules,omitempty"`
	// Peers are the sets of pods the rules name, by key.
	// +optional
	Peers []PolicyPeer `json:"peers,omitempty"`
}

// PolicyRule is one rule of a policy's security group.
type PolicyRule struct {
	// Direction is ingress or egress.
	Direction string `json:"direction"`
	// Protocol is tcp, udp or sctp; empty: any.
	// +optional
	Protocol string `json:"protocol,omitempty"`
	// PortMin and PortMax: 0 for every port.
	// +optional
	PortMin int `json:"portMin,omitempty"`
	// +optional
	PortMax int `json:"portMax,omitempty"`
	// CIDR is the remote prefix, or Peer names the remote peer group.
	// +optional
	CIDR string `json:"cidr,omitempty"`
	// +optional
	Peer string `json:"peer,omitempty"`
}

// PolicyPeer is the set of pods one peer selects.
type PolicyPeer struct {
	// Key identifies the peer (its selectors).
	Key string `json:"key"`
	// Namespace is the policy's, when NamespaceSelector is unset.
	// +optional
	Namespace string `json:"namespace,omitempty"`
	// +optional
	NamespaceSelector *metav1.LabelSelector `json:"namespaceSelector,omitempty"`
	// +optional
	PodSelector *metav1.LabelSelector `json:"podSelector,omitempty"`
}

// KuryrNetworkPolicyStatus is the Neutron side of a policy. The
// KuryrNetworkPolicy reconciler is its only writer.
type KuryrNetworkPolicyStatus struct {
	// +optional
	SecurityGroupID string `json:"securityGroupId,omitempty"`
	// PeerGroups are the security groups whose member ports are a peer's
	// pods (rules name them as their remote group), by peer key. They are
	// shared by the policies with an equal peer.
	// +optional
	PeerGroups map[string]string `json:"peerGroups,omitempty"`
	// PeerAddressGroups are the Neutron address groups holding a peer's
	// pods' addresses (rules name them as their remote address group), by
	// peer key: used instead of PeerGroups where Neutron enforces a rule's
	// remote address group (the controller probes it at start). Shared by
	// the policies with an equal peer.
	// +optional
	PeerAddressGroups map[string]string `json:"peerAddressGroups,omitempty"`
	// PeerKind is what the rules name as peers now: AddressGroups, or ""
	// for security groups. Pods' ports carry the peer groups of a policy
	// only while its rules name security groups.
	// +optional
	PeerKind string `json:"peerKind,omitempty"`
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// PeerKindAddressGroups: a policy's rules name its peers' address groups.
const PeerKindAddressGroups = "AddressGroups"

// KuryrNetworkPolicy is a NetworkPolicy's security group and the peer
// groups its rules name (one per NetworkPolicy, same name and namespace,
// owned by it).
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=knp
// +kubebuilder:printcolumn:name="SG",type=string,JSONPath=`.status.securityGroupId`
// +kubebuilder:printcolumn:name="Ingress",type=boolean,JSONPath=`.spec.ingress`
// +kubebuilder:printcolumn:name="Egress",type=boolean,JSONPath=`.spec.egress`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type KuryrNetworkPolicy struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   KuryrNetworkPolicySpec   `json:"spec"`
	Status KuryrNetworkPolicyStatus `json:"status,omitempty"`
}

// KuryrNetworkPolicyList is a list of KuryrNetworkPolicies.
//
// +kubebuilder:object:root=true
type KuryrNetworkPolicyList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []KuryrNetworkPolicy `json:"items"`
}
