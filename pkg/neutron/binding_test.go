package neutron

import (
	"testing"
	"time"
)

// A port is taken for done once bound, or once older than the bind
// timeout (a VM's, unbound by design; or one Neutron will never bind).
func TestCreateFinished(t *testing.T) {
	now := time.Now()
	port := func(host, vifType string, created time.Time) Port {
		var p Port
		p.HostID, p.VIFType, p.CreatedAt = host, vifType, created
		return p
	}
	for _, c := range []struct {
		name string
		port Port
		want bool
	}{
		{"bound", port("n", "ovs", now), true},
		{"binding failed", port("n", VIFTypeBindingFailed, now), true},
		{"being bound", port("n", VIFTypeUnbound, now), false},
		{"never bound", port("n", VIFTypeUnbound, now.Add(-time.Minute)), true},
		{"young VM port", port("", VIFTypeUnbound, now), false},
		{"VM port", port("", VIFTypeUnbound, now.Add(-time.Minute)), true},
		{"binding hidden", port("", "", now), false},
		{"no creation time", port("n", VIFTypeUnbound, time.Time{}), true},
	} {
		if got := CreateFinished(&c.port, time.Minute, now); got != c.want {
			t.Errorf("%s: got %v", c.name, got)
		}
	}
}
