package node

import (
	"net"
	"reflect"
	"testing"

	kuryrv1 "github.com/kuryr-k8s/kuryr/api/v1"
	"github.com/kuryr-k8s/kuryr/pkg/neutron"
	"github.com/kuryr-k8s/kuryr/pkg/neutron/neutrontest"
)

func TestRefused(t *testing.T) {
	for _, tc := range []struct {
		name string
		sub  neutron.Subnet
		want []string
	}{
		{"Kubernetes has the lower half (the local cloud)", neutron.Subnet{CIDR: "10.96.0.0/16", GatewayIP: "10.96.255.254",
			Pools: []neutron.Range{{Start: "10.96.128.1", End: "10.96.255.253"}}},
			[]string{"10.96.0.1/32", "10.96.0.2/31", "10.96.0.4/30", "10.96.0.8/29", "10.96.0.16/28", "10.96.0.32/27", "10.96.0.64/26",
				"10.96.0.128/25", "10.96.1.0/24", "10.96.2.0/23", "10.96.4.0/22", "10.96.8.0/21", "10.96.16.0/20", "10.96.32.0/19",
				"10.96.64.0/18", "10.96.128.0/32"}},
		{"pools in two pieces", neutron.Subnet{CIDR: "10.0.0.0/29", GatewayIP: "10.0.0.1",
			Pools: []neutron.Range{{Start: "10.0.0.2", End: "10.0.0.3"}, {Start: "10.0.0.6", End: "10.0.0.6"}}},
			[]string{"10.0.0.4/31"}},
		{"IPv6", neutron.Subnet{CIDR: "fd00::/120", GatewayIP: "fd00::1", Pools: []neutron.Range{{Start: "fd00::80", End: "fd00::ff"}}},
			[]string{"fd00::2/127", "fd00::4/126", "fd00::8/125", "fd00::10/124", "fd00::20/123", "fd00::40/122"}},
		{"Neutron has it all", neutron.Subnet{CIDR: "10.0.0.0/29", GatewayIP: "10.0.0.1",
			Pools: []neutron.Range{{Start: "10.0.0.2", End: "10.0.0.6"}}}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			np, err := refusing(kuryrv1.NodePort{}, &tc.sub)
			if tc.want == nil {
				if err == nil {
					t.Fatalf("refuse %v, want an error: nothing is left for ClusterIPs", np.Refuse)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(np.Refuse, tc.want) {
				t.Fatalf("refuse %v\nwant   %v", np.Refuse, tc.want)
			}
			if len(np.Routes) != 1 || np.Routes[0].Gateway != tc.sub.GatewayIP {
				t.Fatalf("routes %v, want a default route via %s", np.Routes, tc.sub.GatewayIP)
			}
		})
	}
}

// A node gets a refuse port on the service network besides its
// management port; both go when the node does, the refuse port alone when
// refusing is turned off.
func TestRefusePort(t *testing.T) {
	e := newEnv(t, node("n1"))
	e.refuseSubnet()
	e.reconcile(t, "n1")
	rp, ok := e.annotationOf(t, "n1", kuryrv1.RefusePortAnnotation)
	if !ok || len(rp.Refuse) == 0 || rp.Refuse[len(rp.Refuse)-1] != "10.96.128.0/32" || rp.MTU != 1442 {
		t.Fatalf("refuse annotation %+v", rp)
	}
	if rp.AnswerMAC != answerMAC(e.r.Settings.RefuseSubnet) || rp.AnswerMAC == rp.MACAddress {
		t.Errorf("refuse annotation answers with %q, want the subnet's %q, not the port's own", rp.AnswerMAC,
			answerMAC(e.r.Settings.RefuseSubnet))
	}
	port := e.fake.Get("ports", rp.PortID)
	if port["binding:host_id"] != "n1" || port["port_security_enabled"] != false || port["device_owner"] != RefuseDeviceOwner {
		t.Errorf("refuse port %v", port)
	}
	if np, ok := e.annotation(t, "n1"); !ok || np.PortID == rp.PortID {
		t.Fatalf("management annotation %+v", np)
	}
	writes := e.fake.Writes()
	e.reconcile(t, "n1")
	if e.fake.Writes() != writes {
		t.Errorf("a second reconcile wrote to Neutron: %v", e.fake.Requests)
	}
	e.r.Settings.RefuseSubnet = ""
	e.reconcile(t, "n1")
	if _, ok := e.annotationOf(t, "n1", kuryrv1.RefusePortAnnotation); ok || e.fake.Count("ports") != 1 {
		t.Fatalf("refusing off: annotation left %v, %d ports (want the management port only)", ok, e.fake.Count("ports"))
	}
}

// Every node answers with one MAC per service subnet: locally
// administered, unicast, never one of Neutron's (fa:16:3e:…).
func TestAnswerMAC(t *testing.T) {
	a, b := answerMAC("160c8d4a-d2a7-47ee-843f-7f4da39c6ff3"), answerMAC("b2c5f074-2c5c-40aa-89bd-9403c56fdc7f")
	if a != answerMAC("160c8d4a-d2a7-47ee-843f-7f4da39c6ff3") || a == b {
		t.Fatalf("answer MACs %s and %s: want one per subnet, stable", a, b)
	}
	for _, m := range []string{a, b} {
		mac, err := net.ParseMAC(m)
		if err != nil || len(mac) != 6 || mac[0] != 0x02 {
			t.Errorf("answer MAC %q (%v): want a locally administered unicast Ethernet address", m, err)
		}
	}
}

// refuseSubnet turns refusing on, on a service subnet like the local
// cloud's (Kubernetes has the lower half).
func (e *env) refuseSubnet() {
	svcNet := e.fake.Add("networks", neutrontest.Object{"name": "services", "mtu": 1442})
	e.r.Settings.RefuseSubnet = e.fake.Add("subnets", neutrontest.Object{"network_id": svcNet, "cidr": "10.96.0.0/16",
		"gateway_ip": "10.96.255.254", "allocation_pools": []map[string]string{{"start": "10.96.128.1", "end": "10.96.255.253"}}})
}
