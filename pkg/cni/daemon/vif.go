package daemon

import (
	"fmt"
	"net"

	"github.com/google/uuid"

	kuryrv1 "github.com/kuryr-k8s/kuryr/api/v1"
)

// checkVIF checks the port data another component wrote before anything
// is plugged with it, and returns the host interface name, derived here
// from the port id (never taken from the KuryrPort).
func checkVIF(v kuryrv1.VIF) (string, error) {
	if _, err := uuid.Parse(v.PortID); err != nil || len(v.PortID) != 36 {
		return "", fmt.Errorf("port id %q is not a UUID", v.PortID)
	}
	mac, err := net.ParseMAC(v.MACAddress)
	if err != nil || len(mac) != 6 || mac[0]&1 == 1 {
		return "", fmt.Errorf("MAC address %q is not a unicast Ethernet address", v.MACAddress)
	}
	if v.MTU != 0 && (v.MTU < 576 || v.MTU > 65535) {
		return "", fmt.Errorf("MTU %d out of range", v.MTU)
	}
	return kuryrv1.HostIfName(v.PortID), nil
}
