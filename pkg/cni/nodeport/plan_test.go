package nodeport

import (
	"strings"
	"testing"

	kuryrv1 "github.com/kuryr-k8s/kuryr/api/v1"
)

func TestNewPlan(t *testing.T) {
	good := kuryrv1.NodePort{
		PortID: "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0", MACAddress: "fa:16:3e:00:00:09", MTU: 1442,
		IPs:    []string{"10.11.0.5/24"},
		Routes: []kuryrv1.Route{{Destination: "10.10.0.0/16", Gateway: "10.11.0.1"}, {Destination: "10.96.0.0/16", Gateway: "10.11.0.1"}},
	}
	p, err := NewPlan(good)
	if err != nil || len(p.Routes) != 2 || p.Addrs[0].String() != "10.11.0.5/24" || p.MTU != 1442 {
		t.Fatalf("plan %+v, %v", p, err)
	}
	tests := []struct {
		name string
		edit func(*kuryrv1.NodePort)
		want string
	}{
		{"port id", func(n *kuryrv1.NodePort) { n.PortID = "../etc" }, "not a UUID"},
		{"multicast MAC", func(n *kuryrv1.NodePort) { n.MACAddress = "01:00:5e:00:00:01" }, "unicast"},
		{"no address", func(n *kuryrv1.NodePort) { n.IPs = nil }, "no address"},
		{"bad address", func(n *kuryrv1.NodePort) { n.IPs = []string{"10.11.0.5"} }, "address"},
		{"default route", func(n *kuryrv1.NodePort) { n.Routes[0].Destination = "0.0.0.0/0" }, "wider than /8"},
		{"half the internet", func(n *kuryrv1.NodePort) { n.Routes[0].Destination = "0.0.0.0/1" }, "wider than /8"},
		{"gateway elsewhere", func(n *kuryrv1.NodePort) { n.Routes[0].Gateway = "192.168.1.1" }, "not on the port's subnet"},
		{"MTU", func(n *kuryrv1.NodePort) { n.MTU = 70000 }, "MTU"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			np := good
			np.Routes = append([]kuryrv1.Route(nil), good.Routes...)
			tt.edit(&np)
			if _, err := NewPlan(np); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err %v, want %q", err, tt.want)
			}
		})
	}
}
