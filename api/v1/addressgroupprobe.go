package v1

import "time"

// AddressGroupProbeAnnotation is the Node annotation where the leading
// kuryr-controller records its address-group probe's answer (an
// AddressGroupProbe in JSON) on the node it probed from, for `kubectl
// kuryr doctor`.
const AddressGroupProbeAnnotation = "kuryr.openstack.org/address-group-probe"

// AddressGroupVerdict is what the address-group probe found.
type AddressGroupVerdict string

const (
	// AddressGroupsEnforced: traffic the address group no longer admitted
	// was dropped.
	AddressGroupsEnforced AddressGroupVerdict = "Enforced"
	// AddressGroupsNotEnforced: a rule admitted traffic from outside its
	// address group (ML2/OVN before Neutron 26.0.0).
	AddressGroupsNotEnforced AddressGroupVerdict = "NotEnforced"
	// AddressGroupsUnknown: the probe could not run or its port never
	// answered.
	AddressGroupsUnknown AddressGroupVerdict = "Unknown"
)

// AddressGroupProbe is an address-group probe's answer.
//
// +kubebuilder:object:generate=false
type AddressGroupProbe struct {
	Verdict AddressGroupVerdict `json:"verdict"`
	Detail  string              `json:"detail"`
	Time    time.Time           `json:"time"`
	// AddressGroups: NetworkPolicy peers are address groups.
	AddressGroups bool `json:"addressGroups"`
	// Off: [network_policy] address_groups = false; nothing was probed.
	Off bool `json:"off,omitempty"`
}
