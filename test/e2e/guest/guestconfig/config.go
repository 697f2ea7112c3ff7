// Package guestconfig is what test/e2e/nested tells the QEMU guest it
// boots (test/e2e/guest, its /init): a file in the guest's initramfs.
package guestconfig

import kuryrv1 "github.com/kuryr-k8s/kuryr/api/v1"

// Path is where the guest finds its configuration.
const Path = "/guest.json"

// Config describes the VM and the pod it plugs.
type Config struct {
	// Modules are loaded in this order from /modules (NAME.ko).
	Modules []string
	// The VM's NIC: its Neutron port's MAC, address (CIDR), gateway, MTU.
	MAC, Address, Gateway string
	MTU                   int
	// VIF is the pod's, as its KuryrPort has it (a subport of the VM's
	// trunk): the guest plugs it as kuryr-daemon does.
	VIF kuryrv1.VIF
	// Get is the host:port the pod sends GET / to; Serve how long the pod
	// answers GET / on port 8080 (with ServeReply) before the guest powers
	// off.
	Get        string
	Serve      int // seconds
	ServeReply string
}
