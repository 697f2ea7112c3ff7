//go:build e2e

package policy

import (
	"testing"
	"time"
)

// TestRestartWritesNothing: a restarted controller finds the policies'
// groups, the peers' groups and the pods' ports as they should be, and
// makes not one Neutron write; the policies still hold.
func TestRestartWritesNothing(t *testing.T) {
	f := newFixture(t, "np-restart", map[string]map[string]string{"a": nil},
		podSpec{name: "srv-0", ns: "a", node: 0, labels: labels("role", "server"), server: true},
		podSpec{name: "cl-0", ns: "a", node: 1, labels: labels("role", "client")},
		podSpec{name: "cl-1", ns: "a", node: 0},
	)
	web := f.tcp(t, "srv-0", portWeb)
	np := netpol(f.ns("a"), "clients", ingressOnly, "role", "server")
	np.Spec.Ingress = append(np.Spec.Ingress, from(ports(port(portWeb)), podPeer("role", "client")))
	since := f.apply(t, np)
	await(t, since, "cl-0 admitted, cl-1 not", join(f.allow(t, "cl-0", web), f.deny(t, "cl-1", web))...)

	f.k.Controller(t, "restart")
	time.Sleep(15 * time.Second) // every object reconciled at least once
	writes, err := f.c.OpenStackWrites("network")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("Neutron writes by the restarted controller: %.0f", writes)
	if writes != 0 {
		t.Errorf("the restarted controller made %.0f Neutron writes, want 0", writes)
	}
	await(t, time.Now(), "after the restart: cl-0 admitted, cl-1 not", join(f.allow(t, "cl-0", web), f.deny(t, "cl-1", web))...)
}
