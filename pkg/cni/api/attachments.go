package api

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"time"
)

// attachmentsTimeout bounds FetchAttachments (`kuryr-daemon attachments`).
const attachmentsTimeout = 5 * time.Second

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

// FetchAttachments copies the body of GET url (a daemon's
// AttachmentsPath) to w, within attachmentsTimeout.
func FetchAttachments(url string, w io.Writer) error {
	ctx, cancel := context.WithTimeout(context.Background(), attachmentsTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return fmt.Errorf("request %s: %w", url, err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("is kuryr-daemon running on this node? GET %s: %w", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return fmt.Errorf("GET %s: %s: %s", url, resp.Status, body)
	}
	if _, err := io.Copy(w, resp.Body); err != nil {
		return fmt.Errorf("read %s: %w", url, err)
	}
	return nil
}
