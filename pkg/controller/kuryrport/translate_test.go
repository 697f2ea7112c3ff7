package kuryrport

import (
	"reflect"
	"testing"

	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kuryrv1 "github.com/kuryr-k8s/kuryr/api/v1"
	"github.com/kuryr-k8s/kuryr/pkg/neutron"
)

func TestPortSpec(t *testing.T) {
	k := &kuryrv1.KuryrPort{
		ObjectMeta: metav1.ObjectMeta{Name: "web-0", Namespace: "shop"},
		Spec:       kuryrv1.KuryrPortSpec{PodUID: "u1", PodNodeName: "n1"},
	}
	tests := []struct {
		name     string
		settings Settings
		wantName string
		wantTags []string
	}{
		{"debug names", Settings{Cluster: "c", PortDebug: true}, "shop/web-0", []string{"kuryr-cluster=c", "kuryr-pod=u1"}},
		{"no debug", Settings{Cluster: "c"}, "", []string{"kuryr-cluster=c", "kuryr-pod=u1"}},
		{"extra tags", Settings{Cluster: "c", ExtraTags: []string{"team=a"}}, "", []string{"kuryr-cluster=c", "kuryr-pod=u1", "team=a"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := portSpec(k, Target{NetworkID: "net", SubnetID: "sub"}, tt.settings)
			if s.Name != tt.wantName || !reflect.DeepEqual(s.Tags, tt.wantTags) {
				t.Errorf("name %q tags %v", s.Name, s.Tags)
			}
			if s.HostID != "n1" || s.DeviceID != "u1" || s.DeviceOwner != DeviceOwner || s.SubnetID != "sub" || s.NetworkID != "net" {
				t.Errorf("spec %+v", s)
			}
		})
	}
}

func TestVIFFor(t *testing.T) {
	sub4 := &neutron.Subnet{ID: "s4", CIDR: "10.10.3.0/24", GatewayIP: "10.10.3.1", DNS: []string{"8.8.8.8"},
		HostRoutes: []neutron.Route{{Destination: "192.168.0.0/16", NextHop: "10.10.3.254"}}}
	sub6 := &neutron.Subnet{ID: "s6", CIDR: "fd00::/64", GatewayIP: "fd00::1", DNS: []string{"8.8.8.8"}}
	port := func(status string, details map[string]any, ips ...ports.IP) *neutron.Port {
		p := &neutron.Port{}
		p.ID, p.MACAddress, p.NetworkID, p.Status, p.FixedIPs = "0123456789abcdef", "fa:16:3e:00:00:01", "net", status, ips
		p.VIFType, p.VIFDetails = "ovs", details
		return p
	}
	tests := []struct {
		name    string
		port    *neutron.Port
		mtu     int
		set     Settings
		check   func(kuryrv1.VIF) bool
		wantErr bool
	}{
		{"ipv4 with prefix, gateway, routes, dns", port("DOWN", nil, ports.IP{SubnetID: "s4", IPAddress: "10.10.3.5"}), 1442, Settings{Bridge: "br-int"},
			func(v kuryrv1.VIF) bool {
				return v.IPs[0].Address == "10.10.3.5/24" && v.Gateway == "10.10.3.1" && len(v.Routes) == 1 &&
					v.DNS[0] == "8.8.8.8" && v.MTU == 1442 && !v.Active && v.Bridge == "br-int" && v.VIFName == "tap0123456789a"
			}, false},
		{"dual stack, dns deduplicated", port("ACTIVE", nil, ports.IP{SubnetID: "s4", IPAddress: "10.10.3.5"}, ports.IP{SubnetID: "s6", IPAddress: "fd00::5"}), 1500, Settings{},
			func(v kuryrv1.VIF) bool {
				return len(v.IPs) == 2 && v.IPs[1].Address == "fd00::5/64" && len(v.DNS) == 1 && v.Active
			}, false},
		{"mtu capped", port("DOWN", nil, ports.IP{SubnetID: "s4", IPAddress: "10.10.3.5"}), 1500, Settings{MTUCap: 1400},
			func(v kuryrv1.VIF) bool { return v.MTU == 1400 }, false},
		{"cap above network mtu ignored", port("DOWN", nil, ports.IP{SubnetID: "s4", IPAddress: "10.10.3.5"}), 1442, Settings{MTUCap: 9000},
			func(v kuryrv1.VIF) bool { return v.MTU == 1442 }, false},
		{"bridge from binding details", port("DOWN", map[string]any{"bridge_name": "br-alt"}, ports.IP{SubnetID: "s4", IPAddress: "10.10.3.5"}), 1442, Settings{Bridge: "br-int"},
			func(v kuryrv1.VIF) bool { return v.Bridge == "br-alt" }, false},
		{"unknown subnet", port("DOWN", nil, ports.IP{SubnetID: "nope", IPAddress: "1.2.3.4"}), 1442, Settings{}, nil, true},
		{"no addresses", port("DOWN", nil), 1442, Settings{}, nil, true},
	}
	byID := map[string]*neutron.Subnet{"s4": sub4, "s6": sub6}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, err := vifFor(tt.port, byID, tt.mtu, tt.set)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v", err)
			}
			if err == nil && !tt.check(v) {
				t.Errorf("vif %+v", v)
			}
		})
	}
}
