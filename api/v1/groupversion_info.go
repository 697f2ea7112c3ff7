// Package v1 holds kuryr's custom resources, group openstack.org, version v1.
// The kinds keep the names of the original kuryr-kubernetes (KuryrPort,
// KuryrNetwork, KuryrLoadBalancer, KuryrNetworkPolicy) so that its operators recognise them.
//
// +kubebuilder:object:generate=true
// +groupName=openstack.org
package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	// GroupVersion is the API group and version of kuryr's resources.
	GroupVersion = schema.GroupVersion{Group: "openstack.org", Version: "v1"}

	// SchemeBuilder registers the kinds of this package with a scheme. Only
	// apimachinery is imported here, so clients can use these types cheaply.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)

	// AddToScheme adds the kinds of this package to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

func addKnownTypes(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion, &KuryrPort{}, &KuryrPortList{}, &KuryrNetwork{}, &KuryrNetworkList{},
		&KuryrLoadBalancer{}, &KuryrLoadBalancerList{}, &KuryrNetworkPolicy{}, &KuryrNetworkPolicyList{})
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}

// Finalizers and labels kuryr puts on its objects. The values are those of
// the original project, so objects it left behind are recognised.
const (
	KuryrPortFinalizer    = "kuryr.openstack.org/kuryrport-finalizer"
	KuryrNetworkFinalizer = "kuryrnetwork.finalizers.kuryr.openstack.org"
	// KuryrLoadBalancerFinalizer holds a KuryrLoadBalancer until its Octavia
	// load balancer and floating IP are gone.
	KuryrLoadBalancerFinalizer = "kuryr.openstack.org/kuryrloadbalancer-finalizers"
	// KuryrNetworkPolicyFinalizer holds a KuryrNetworkPolicy until its
	// security group, and the peer groups no other policy names, are gone.
	KuryrNetworkPolicyFinalizer = "kuryr.openstack.org/networkpolicy-finalizer"
	// NodeNameLabel lets each node's daemon watch only its own KuryrPorts.
	NodeNameLabel = "kuryr.openstack.org/nodeName"
)

// Condition types and reasons shared by kuryr's resources. A False Ready
// condition caused by Neutron carries the error's kind as its reason
// (SubnetFull, QuotaExceeded, NeutronUnavailable, NotFound, Conflict...).
const (
	// ConditionReady is True when the Neutron side matches the spec.
	ConditionReady = "Ready"

	// ReasonCreated: kuryr created the Neutron resources.
	ReasonCreated = "Created"
	// ReasonAdopted: they existed already (created before a restart).
	ReasonAdopted = "Adopted"
	// ReasonPooled: the port came from the node's pool of ready ports.
	ReasonPooled = "Pooled"
	// ReasonWaiting: something else must happen first.
	ReasonWaiting = "Waiting"
)

// maxConditionMessage bounds the condition messages kuryr writes (OpenStack
// error bodies can be long).
const maxConditionMessage = 1000

// ConditionMessage cuts msg to the length kuryr's condition messages keep.
func ConditionMessage(msg string) string {
	if len(msg) > maxConditionMessage {
		return msg[:maxConditionMessage]
	}
	return msg
}
