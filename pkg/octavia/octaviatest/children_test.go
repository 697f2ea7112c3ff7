package octaviatest

import (
	"testing"

	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/listeners"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/loadbalancers"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/pools"
)

func TestCreateListener(t *testing.T) {
	f := New(t)
	f.Instant = true
	c := f.Client(t)
	lb, _, _, _ := seed(f) // TCP 80 with a TCP pool
	udpPool := f.Add(Pools, Object{"loadbalancer_id": lb, "protocol": "UDP", "lb_algorithm": "SOURCE_IP_PORT"})
	tcp := func(port int) listeners.CreateOpts {
		return listeners.CreateOpts{LoadbalancerID: lb, Protocol: listeners.ProtocolTCP, ProtocolPort: port, Name: "l"}
	}
	tests := []struct {
		name string
		opts listeners.CreateOpts
		code int // 0: created
		msg  string
	}{
		{"same protocol and port", tcp(80), 409, "Another Listener on this Load Balancer is already using protocol TCP and protocol_port 80"},
		{"same port, UDP", listeners.CreateOpts{LoadbalancerID: lb, Protocol: listeners.ProtocolUDP, ProtocolPort: 80}, 0, ""},
		{"same port, SCTP", listeners.CreateOpts{LoadbalancerID: lb, Protocol: listeners.ProtocolSCTP, ProtocolPort: 80}, 0, ""},
		{"other port", tcp(443), 0, ""},
		{"HTTP", listeners.CreateOpts{LoadbalancerID: lb, Protocol: listeners.ProtocolHTTP, ProtocolPort: 81}, 501,
			"Provider 'ovn' does not support a requested option: OVN provider does not support HTTP protocol"},
		{"allowed cidrs", func() listeners.CreateOpts { o := tcp(82); o.AllowedCIDRs = []string{"10.0.0.0/8"}; return o }(),
			501, "OVN provider does not support allowed_cidrs option"},
		{"default pool object", func() listeners.CreateOpts {
			o := tcp(83)
			o.DefaultPool = &pools.CreateOpts{Name: "p", Protocol: pools.ProtocolTCP, LBMethod: pools.LBMethodSourceIpPort,
				Members: []pools.CreateMemberOpts{{Address: "10.1.0.9", ProtocolPort: 80}}}
			return o
		}(), 500, "'dict' object has no attribute '_sa_instance_state'"},
		{"default pool of another protocol", func() listeners.CreateOpts { o := tcp(84); o.DefaultPoolID = udpPool; return o }(),
			400, "The pool protocol 'UDP' is invalid while the listener protocol is 'TCP'."},
		{"no load balancer", listeners.CreateOpts{LoadbalancerID: "nope", Protocol: listeners.ProtocolTCP, ProtocolPort: 80},
			404, "Load Balancer nope not found."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := [2]int{f.Count(Listeners), f.Count(Pools)}
			l, err := listeners.Create(ctx, c, tt.opts).Extract()
			if tt.code != 0 {
				wantFailure(t, err, tt.code, tt.msg)
				if after := [2]int{f.Count(Listeners), f.Count(Pools)}; after != before {
					t.Errorf("listeners, pools %v -> %v", before, after)
				}
				return
			}
			must(t, err)
			if l.ProtocolPort != tt.opts.ProtocolPort || l.Loadbalancers[0].ID != lb || l.DefaultPoolID != "" {
				t.Errorf("listener %+v", l)
			}
		})
	}
}

func TestDeleteListenerKeepsPool(t *testing.T) {
	f := New(t)
	c := f.Client(t)
	lb, listener, pool, _ := seed(f)
	other := f.Add(Listeners, Object{"loadbalancer_id": lb, "protocol": "UDP", "protocol_port": 53})
	must(t, listeners.Delete(ctx, c, listener).ExtractErr())
	if got := f.Get(LoadBalancers, lb)["provisioning_status"]; got != "PENDING_UPDATE" {
		t.Errorf("load balancer %v after the delete", got)
	}
	wantFailure(t, listeners.Delete(ctx, c, other).ExtractErr(), 409, "Load Balancer "+lb+" is immutable")
	p, err := pools.Get(ctx, c, pool).Extract()
	must(t, err)
	if len(p.Listeners) != 0 || len(p.Members) != 1 {
		t.Errorf("pool after its listener's delete: %+v", p)
	}
	wantFailure(t, listeners.Delete(ctx, c, listener).ExtractErr(), 404, "Listener "+listener+" not found.")
}

func TestCreatePool(t *testing.T) {
	f := New(t)
	f.Instant = true
	c := f.Client(t)
	lb := f.Add(LoadBalancers, Object{"vip_subnet_id": vipSubnet})
	tcp := f.Add(Listeners, Object{"loadbalancer_id": lb, "protocol": "TCP", "protocol_port": 80})
	udp := f.Add(Listeners, Object{"loadbalancer_id": lb, "protocol": "UDP", "protocol_port": 53})
	pool := func(listener, lbID string, alg pools.LBMethod) pools.CreateOpts {
		return pools.CreateOpts{ListenerID: listener, LoadbalancerID: lbID, Protocol: pools.ProtocolTCP, LBMethod: alg, Name: "p"}
	}
	tests := []struct {
		name     string
		opts     pools.CreateOpts
		code     int
		msg      string
		listener string // listener whose default pool it becomes
	}{
		{"for a listener", pool(tcp, "", pools.LBMethodSourceIpPort), 0, "", tcp},
		{"listener has one", pool(tcp, "", pools.LBMethodSourceIpPort), 409, "This listener already has a default pool", ""},
		{"on the load balancer", pool("", lb, pools.LBMethodSourceIpPort), 0, "", ""},
		{"round robin", pool("", lb, pools.LBMethodRoundRobin), 501,
			"Provider 'ovn' does not support a requested option: OVN provider does not support ROUND_ROBIN algorithm", ""},
		{"with members", func() pools.CreateOpts {
			o := pool("", lb, pools.LBMethodSourceIpPort)
			o.Members = []pools.CreateMemberOpts{{Address: "10.1.0.5", ProtocolPort: 80}}
			return o
		}(), 500, "'dict' object has no attribute '_sa_instance_state'", ""},
		{"protocol", pool(udp, "", pools.LBMethodSourceIpPort), 400,
			"The pool protocol 'TCP' is invalid while the listener protocol is 'UDP'.", ""},
		{"no parent", pool("", "", pools.LBMethodSourceIpPort), 400,
			"Validation failure: Must provide at least one of: loadbalancer_id, listener_id", ""},
		{"unknown listener", pool("nope", "", pools.LBMethodSourceIpPort), 500, "'NoneType' object", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := f.Count(Pools)
			p, err := pools.Create(ctx, c, tt.opts).Extract()
			if tt.code != 0 {
				wantFailure(t, err, tt.code, tt.msg)
				if f.Count(Pools) != before {
					t.Error("a pool was stored")
				}
				return
			}
			must(t, err)
			if p.ProvisioningStatus != "PENDING_CREATE" || p.Loadbalancers[0].ID != lb || p.LBMethod != "SOURCE_IP_PORT" {
				t.Errorf("pool %+v", p)
			}
			if tt.listener != "" {
				l, err := listeners.Get(ctx, c, tt.listener).Extract()
				must(t, err)
				if l.DefaultPoolID != p.ID || len(p.Listeners) != 1 || p.Listeners[0].ID != tt.listener {
					t.Errorf("listener %+v, pool %+v", l, p)
				}
			}
		})
	}
}

func TestDeletePool(t *testing.T) {
	f := New(t)
	c := f.Client(t)
	lb, listener, pool, _ := seed(f)
	f.Add(Members, Object{"pool_id": pool, "address": "10.1.0.6", "protocol_port": 8080})
	must(t, pools.Delete(ctx, c, pool).ExtractErr())
	if f.Count(Members) != 0 || f.Count(Pools) != 0 {
		t.Errorf("%d members, %d pools left", f.Count(Members), f.Count(Pools))
	}
	l, err := listeners.Get(ctx, c, listener).Extract()
	must(t, err)
	if l.DefaultPoolID != "" || l.ProvisioningStatus != "PENDING_UPDATE" {
		t.Errorf("listener %+v", l)
	}
	f.Settle()
	wantFailure(t, pools.Delete(ctx, c, pool).ExtractErr(), 404, "Pool "+pool+" not found.")
	lbNow, err := loadbalancers.Get(ctx, c, lb).Extract()
	must(t, err)
	if len(lbNow.Pools) != 0 || len(lbNow.Listeners) != 1 {
		t.Errorf("load balancer %+v", lbNow)
	}
}

func TestBatchUpdateMembers(t *testing.T) {
	f := New(t)
	c := f.Client(t)
	lb, _, pool, kept := seed(f) // member 10.1.0.5:8080
	gone := f.Add(Members, Object{"pool_id": pool, "address": "10.1.0.6", "protocol_port": 8080})
	subnet, name := podSubnet, "kept"
	opts := []pools.BatchUpdateMemberOpts{
		{Address: "10.1.0.5", ProtocolPort: 8080, SubnetID: &subnet, Name: &name},
		{Address: "10.1.0.7", ProtocolPort: 8080, SubnetID: &subnet},
	}
	must(t, pools.BatchUpdateMembers(ctx, c, pool, opts).ExtractErr())
	members := func() map[string]pools.Member {
		t.Helper()
		pages, err := pools.ListMembers(c, pool, nil).AllPages(ctx)
		must(t, err)
		ms, _ := pools.ExtractMembers(pages)
		out := map[string]pools.Member{}
		for _, m := range ms {
			out[m.Address] = m
		}
		return out
	}
	ms := members() // the first GET still sees the update pending
	if len(ms) != 2 || ms["10.1.0.5"].ID != kept || ms["10.1.0.5"].Name != "kept" ||
		ms["10.1.0.5"].ProvisioningStatus != "PENDING_UPDATE" || ms["10.1.0.7"].ProvisioningStatus != "PENDING_CREATE" {
		t.Fatalf("members after the batch: %+v", ms)
	}
	if f.Get(Members, gone) != nil {
		t.Error("unlisted member kept")
	}
	err := pools.BatchUpdateMembers(ctx, c, pool, opts).ExtractErr()
	wantFailure(t, err, 409, "Pool "+pool+" is immutable and cannot be updated.")
	if ms = members(); ms["10.1.0.7"].ProvisioningStatus != "ACTIVE" || ms["10.1.0.7"].OperatingStatus != "NO_MONITOR" {
		t.Errorf("members after settling: %+v", ms)
	}

	dup := append(opts, pools.BatchUpdateMemberOpts{Address: "10.1.0.7", ProtocolPort: 8080})
	err = pools.BatchUpdateMembers(ctx, c, pool, dup).ExtractErr()
	wantFailure(t, err, 409, "Another member on this pool is already using ip 10.1.0.7 on protocol_port 8080")

	must(t, pools.BatchUpdateMembers(ctx, c, pool, []pools.BatchUpdateMemberOpts{}).ExtractErr())
	if f.Count(Members) != 0 {
		t.Errorf("%d members after an empty batch", f.Count(Members))
	}
	f.Settle()
	// Nothing to do: Octavia answers 202 and leaves the load balancer ACTIVE.
	must(t, pools.BatchUpdateMembers(ctx, c, pool, []pools.BatchUpdateMemberOpts{}).ExtractErr())
	if got := f.Get(LoadBalancers, lb)["provisioning_status"]; got != "ACTIVE" {
		t.Errorf("load balancer %v after a no-op batch", got)
	}

	// Without a subnet, the ovn provider needs the VIP subnet to fall back on.
	noSubnet := f.Add(LoadBalancers, Object{"vip_network_id": "net"})
	p2 := f.Add(Pools, Object{"loadbalancer_id": noSubnet, "protocol": "TCP", "lb_algorithm": "SOURCE_IP_PORT"})
	err = pools.BatchUpdateMembers(ctx, c, p2, []pools.BatchUpdateMemberOpts{{Address: "10.1.0.5", ProtocolPort: 80}}).ExtractErr()
	wantFailure(t, err, 501, "Subnet is required")
	wantFailure(t, pools.BatchUpdateMembers(ctx, c, "nope", opts).ExtractErr(), 404, "Pool nope not found.")
}

func TestMembers(t *testing.T) {
	f := New(t)
	c := f.Client(t)
	_, _, pool, member := seed(f)
	m, err := pools.CreateMember(ctx, c, pool, pools.CreateMemberOpts{Address: "10.1.0.8", ProtocolPort: 8080}).Extract()
	must(t, err)
	if m.ProvisioningStatus != "PENDING_CREATE" || m.OperatingStatus != "NO_MONITOR" || m.Address != "10.1.0.8" {
		t.Errorf("member %+v", m)
	}
	f.Settle()
	_, err = pools.CreateMember(ctx, c, pool, pools.CreateMemberOpts{Address: "10.1.0.8", ProtocolPort: 8080}).Extract()
	wantFailure(t, err, 409, "Another member on this pool is already using ip 10.1.0.8 on protocol_port 8080")
	got, err := pools.GetMember(ctx, c, pool, member).Extract()
	must(t, err)
	if got.Address != "10.1.0.5" || got.SubnetID != podSubnet {
		t.Errorf("member %+v", got)
	}
	must(t, pools.DeleteMember(ctx, c, pool, member).ExtractErr())
	f.Settle()
	wantFailure(t, pools.DeleteMember(ctx, c, pool, member).ExtractErr(), 404, "Member "+member+" not found.")
	_, err = pools.CreateMember(ctx, c, "nope", pools.CreateMemberOpts{Address: "10.1.0.8", ProtocolPort: 80}).Extract()
	wantFailure(t, err, 404, "Pool nope not found.")
	if f.Count(Members) != 1 {
		t.Errorf("%d members", f.Count(Members))
	}
}
