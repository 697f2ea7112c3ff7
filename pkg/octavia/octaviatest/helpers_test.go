package octaviatest

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/listeners"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/loadbalancers"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/pools"
)

const (
	vipSubnet = "5b000000-0000-4000-8000-000000000001"
	podSubnet = "5b000000-0000-4000-8000-000000000002"
	project   = "0123456789abcdef0123456789abcdef"
)

var ctx = context.Background()

// failure is an error's HTTP status and Octavia faultstring.
func failure(err error) (int, string) {
	var e gophercloud.ErrUnexpectedResponseCode
	if !errors.As(err, &e) {
		return 0, ""
	}
	var body struct {
		Faultstring string `json:"faultstring"`
	}
	_ = json.Unmarshal(e.Body, &body)
	return e.Actual, body.Faultstring
}

// wantFailure checks that err is an Octavia answer with this status whose
// faultstring contains msg.
func wantFailure(t *testing.T, err error, code int, msg string) {
	t.Helper()
	got, fs := failure(err)
	if got != code || !strings.Contains(fs, msg) {
		t.Fatalf("error = %v (%d %q), want %d with %q", err, got, fs, code, msg)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// fullLB is what kuryr asks for a Service with TCP and UDP port 80.
func fullLB(vip string) loadbalancers.CreateOpts {
	return loadbalancers.CreateOpts{
		Name: "default/web", Description: "svc", VipAddress: vip, VipSubnetID: vipSubnet,
		ProjectID: project, Provider: "ovn", Tags: []string{"kuryr", "uid-1"},
		Listeners: []listeners.CreateOpts{{
			Name: "TCP:80", Protocol: listeners.ProtocolTCP, ProtocolPort: 80, Tags: []string{"kuryr"},
			DefaultPool: &pools.CreateOpts{
				Name: "TCP:80", Protocol: pools.ProtocolTCP, LBMethod: pools.LBMethodSourceIpPort, Tags: []string{"kuryr"},
				Members: []pools.CreateMemberOpts{
					{Address: "10.1.0.5", ProtocolPort: 8080, SubnetID: podSubnet, Name: "pod-a"},
					{Address: "10.1.0.6", ProtocolPort: 8080},
				},
			},
		}, {
			Name: "UDP:80", Protocol: listeners.ProtocolUDP, ProtocolPort: 80,
			DefaultPool: &pools.CreateOpts{Name: "UDP:80", Protocol: pools.ProtocolUDP, LBMethod: pools.LBMethodSourceIpPort},
		}},
	}
}

// seed adds an ACTIVE load balancer with a TCP listener on port 80 whose
// default pool has one member.
func seed(f *Fake) (lb, listener, pool, member string) {
	lb = f.Add(LoadBalancers, Object{"name": "lb", "vip_subnet_id": vipSubnet, "project_id": project})
	listener = f.Add(Listeners, Object{"loadbalancer_id": lb, "protocol": "TCP", "protocol_port": 80})
	pool = f.Add(Pools, Object{"loadbalancer_id": lb, "listener_id": listener, "protocol": "TCP",
		"lb_algorithm": "SOURCE_IP_PORT"})
	member = f.Add(Members, Object{"pool_id": pool, "address": "10.1.0.5", "protocol_port": 8080,
		"subnet_id": podSubnet})
	return lb, listener, pool, member
}
