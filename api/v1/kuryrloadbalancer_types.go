package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// KuryrLoadBalancerSpec is what a Service and its EndpointSlices ask of
// Octavia. The Service reconciler is its only writer.
type KuryrLoadBalancerSpec struct {
	// IP is the VIP: the Service's ClusterIP.
	IP string `json:"ip"`
	// Type is the Service type served: ClusterIP or LoadBalancer.
	Type string `json:"type"`
	// Provider is the Octavia provider (e.g. ovn).
	Provider string `json:"provider,omitempty"`
	// Algorithm is the pools' lb_algorithm.
	Algorithm string `json:"algorithm"`
	// SubnetID is the VIP's subnet (the service subnet).
	SubnetID string `json:"subnetId"`
	// ProjectID owns the load balancer.
	ProjectID string `json:"projectId,omitempty"`
	// LoadBalancerIP is the floating IP the user asked for
	// (spec.loadBalancerIP); empty: one is allocated.
	// +optional
	LoadBalancerIP string `json:"loadBalancerIP,omitempty"`
	// SourceRanges are the Service's loadBalancerSourceRanges.
	// +optional
	SourceRanges []string `json:"sourceRanges,omitempty"`
	// ExternalIPs are the Service's spec.externalIPs, in its order: the
	// first one kuryr can serve becomes the VIP's floating IP (a Service
	// that is not of type LoadBalancer).
	// +optional
	ExternalIPs []string `json:"externalIPs,omitempty"`
	// AffinityTimeoutSeconds is the Service's ClientIP session affinity
	// (spec.sessionAffinityConfig.clientIP.timeoutSeconds); 0: none. Where
	// the provider enforces it, the pools get SOURCE_IP session persistence
	// with this timeout.
	// +optional
	AffinityTimeoutSeconds int32 `json:"affinityTimeoutSeconds,omitempty"`
	// Ports become one listener and one pool each.
	// +optional
	Ports []LoadBalancerPort `json:"ports,omitempty"`
	// External says where a LoadBalancer Service's floating IP comes from,
	// as cloud-provider-openstack's annotations on the Service say.
	// +optional
	External *ExternalSpec `json:"external,omitempty"`
}

// ExternalSpec is what a LoadBalancer Service's annotations of
// cloud-provider-openstack ask of its external address.
type ExternalSpec struct {
	// Internal: no floating IP; the VIP (the ClusterIP, reachable from the
	// cloud's networks routed to the service subnet) is the Service's
	// address (service.beta.kubernetes.io/openstack-internal-load-balancer).
	// +optional
	Internal bool `json:"internal,omitempty"`
	// FloatingNetworkID is the external network the floating IP is
	// allocated from instead of [neutron_defaults] external_svc_net
	// (loadbalancer.openstack.org/floating-network-id).
	// +optional
	FloatingNetworkID string `json:"floatingNetworkId,omitempty"`
	// FloatingSubnetID chooses the subnet of that network
	// (loadbalancer.openstack.org/floating-subnet-id); without it,
	// FloatingSubnet and FloatingSubnetTags choose the first of its subnets
	// that matches both (loadbalancer.openstack.org/floating-subnet: a name,
	// a glob, or "~" and a regular expression, matching the whole name,
	// "!" first to negate; loadbalancer.openstack.org/floating-subnet-tags:
	// tags separated by commas, any of them, all with "&" first, not all
	// with "!" first, none with "!&"), as cloud-provider-openstack reads
	// them.
	// +optional
	FloatingSubnetID string `json:"floatingSubnetId,omitempty"`
	// +optional
	FloatingSubnet string `json:"floatingSubnet,omitempty"`
	// +optional
	FloatingSubnetTags string `json:"floatingSubnetTags,omitempty"`
	// KeepFloatingIP: a floating IP kuryr allocated for the Service is not
	// released when the Service no longer needs it; it is handed over to
	// the project, untagged (loadbalancer.openstack.org/keep-floatingip).
	// +optional
	KeepFloatingIP bool `json:"keepFloatingIP,omitempty"`
	// UnknownClass is the loadbalancer.openstack.org/class the Service
	// names that kuryr.conf has no [LoadBalancerClass] section for: no
	// floating IP is allocated for it, and the one its VIP carries stays,
	// until the class is added or the annotation fixed. (A class kuryr.conf
	// has is resolved into the fields above.)
	// +optional
	UnknownClass string `json:"unknownClass,omitempty"`
}

// LoadBalancerPort is one (protocol, port) of a Service with its members.
type LoadBalancerPort struct {
	// Name is the Service port's name ("" for a single unnamed port).
	Name string `json:"name,omitempty"`
	// Protocol is TCP, UDP or SCTP.
	Protocol string `json:"protocol"`
	Port     int32  `json:"port"`
	// TargetPort as the Service gives it (a number or a container port
	// name); members carry it resolved.
	TargetPort string `json:"targetPort,omitempty"`
	// +optional
	Members []LoadBalancerMember `json:"members,omitempty"`
}

// LoadBalancerMember is one endpoint address behind a port.
type LoadBalancerMember struct {
	IP   string `json:"ip"`
	Port int32  `json:"port"`
	// SubnetID is the Neutron subnet the address is on, when kuryr knows it.
	// +optional
	SubnetID string `json:"subnetId,omitempty"`
	// TargetRef names the endpoint's pod ("namespace/name"), if any.
	// +optional
	TargetRef string `json:"targetRef,omitempty"`
}

// KuryrLoadBalancerStatus is the Octavia and Neutron side of a Service. The
// KuryrLoadBalancer reconciler is its only writer.
type KuryrLoadBalancerStatus struct {
	// +optional
	LoadBalancer *LoadBalancerState `json:"loadBalancer,omitempty"`
	// +optional
	Listeners []ListenerState `json:"listeners,omitempty"`
	// Members is the number of members in all pools.
	// +optional
	Members int `json:"members,omitempty"`
	// +optional
	FloatingIP *FloatingIPState `json:"floatingIP,omitempty"`
	// ExternalIPsNotServed are the external addresses the Service asks for
	// that kuryr does not serve, each with the reason ("address: why").
	// +optional
	ExternalIPsNotServed []string `json:"externalIPsNotServed,omitempty"`
	// SessionAffinity says whether the ClientIP affinity the spec asks for
	// is in force: Enforced (SOURCE_IP session persistence with the
	// timeout on every pool, which the provider was seen to implement),
	// Partial (on the UDP and SCTP ports only: Octavia takes a persistence
	// timeout on no other pool) or NotEnforced (on no port); a Warning
	// Event on the Service says why.
	// +optional
	SessionAffinity string `json:"sessionAffinity,omitempty"`
	// SecurityGroup lets the Service's external clients (its
	// loadBalancerSourceRanges, or everyone) reach the member pods on their
	// target ports; the pods' ports carry it while they are members.
	// +optional
	SecurityGroup string `json:"securityGroup,omitempty"`
	// Replaced are the last load balancers (at most 10) kuryr deleted to
	// replace them (in ERROR, stuck, or no longer matching the spec): one
	// the provider brings back from a failed delete is deleted again, never
	// adopted, also by a restarted controller.
	// +optional
	Replaced []string `json:"replaced,omitempty"`
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// The values of KuryrLoadBalancerStatus.SessionAffinity.
const (
	AffinityEnforced    = "Enforced"
	AffinityNotEnforced = "NotEnforced"
	AffinityPartial     = "Partial"
)

// LoadBalancerState is the Octavia load balancer.
type LoadBalancerState struct {
	ID       string `json:"id"`
	IP       string `json:"ip,omitempty"`
	PortID   string `json:"portId,omitempty"`
	Provider string `json:"provider,omitempty"`
	// ProvisioningStatus as Octavia last reported it.
	ProvisioningStatus string `json:"provisioningStatus,omitempty"`
}

// ListenerState is a listener and its default pool.
type ListenerState struct {
	ID       string `json:"id"`
	Protocol string `json:"protocol"`
	Port     int32  `json:"port"`
	PoolID   string `json:"poolId,omitempty"`
	Members  int    `json:"members"`
}

// FloatingIPState is the floating IP of a Service's VIP: a LoadBalancer
// Service's external IP, or one of its externalIPs.
type FloatingIPState struct {
	ID string `json:"id"`
	IP string `json:"ip"`
	// AllocMethod: "pool" when kuryr allocated it (and releases it), "user"
	// when it existed before (kuryr never deletes it).
	AllocMethod string `json:"allocMethod"`
}

// KuryrLoadBalancer is the Octavia load balancer of one Service: its VIP is
// the ClusterIP, each port is a listener with a pool, each ready endpoint a
// member, and a LoadBalancer Service's external IP a floating IP on the VIP.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=klb
// +kubebuilder:printcolumn:name="VIP",type=string,JSONPath=`.spec.ip`
// +kubebuilder:printcolumn:name="External-IP",type=string,JSONPath=`.status.floatingIP.ip`
// +kubebuilder:printcolumn:name="Members",type=integer,JSONPath=`.status.members`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="LoadBalancer",type=string,JSONPath=`.status.loadBalancer.id`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type KuryrLoadBalancer struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   KuryrLoadBalancerSpec   `json:"spec"`
	Status KuryrLoadBalancerStatus `json:"status,omitempty"`
}

// KuryrLoadBalancerList is a list of KuryrLoadBalancers.
//
// +kubebuilder:object:root=true
type KuryrLoadBalancerList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []KuryrLoadBalancer `json:"items"`
}
