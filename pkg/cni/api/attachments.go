package api

// AttachmentsPath is the daemon's read-only view of the node's OVS
// attachments, served on its health port for `kubectl kuryr describe`
// (through `kuryr-daemon attachments` in the daemon's container).
const AttachmentsPath = "/attachments"

// Attachments is the answer of AttachmentsPath.
type Attachments struct {
	Node       string       `json:"node"`
	Interfaces []Attachment `json:"interfaces"`
}

// Attachment is one OVS interface carrying a Neutron port id
// (external_ids:iface-id), as ovs-vswitchd and ovn-controller see it.
type Attachment struct {
	Interface string `json:"interface"`
	PortID    string `json:"ifaceId"`
	MAC       string `json:"attachedMac,omitempty"`
	// OFPort is -1 when ovs-vswitchd failed to attach the interface, 0
	// before it has.
	OFPort       int    `json:"ofport"`
	LinkState    string `json:"linkState,omitempty"`
	AdminState   string `json:"adminState,omitempty"`
	OVNInstalled bool   `json:"ovnInstalled"`
	// PodNamespace and PodName: the pod whose KuryrPort names the port, if
	// the daemon knows it.
	PodNamespace string `json:"podNamespace,omitempty"`
	PodName      string `json:"podName,omitempty"`
}
