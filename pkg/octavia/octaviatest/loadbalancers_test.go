package octaviatest

import (
	"fmt"
	"testing"

	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/listeners"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/loadbalancers"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/pools"
)

func TestCreateFullyPopulated(t *testing.T) {
	f := New(t)
	c := f.Client(t)
	lb, err := loadbalancers.Create(ctx, c, fullLB("10.0.0.100")).Extract()
	must(t, err)
	if lb.ProvisioningStatus != "PENDING_CREATE" || lb.OperatingStatus != "OFFLINE" || lb.VipAddress != "10.0.0.100" ||
		lb.VipPortID == "" || lb.Provider != "ovn" || lb.ProjectID != project || len(lb.Tags) != 2 {
		t.Fatalf("created %+v", lb)
	}
	// The answer nests full listeners and pools (with members).
	if len(lb.Listeners) != 2 || lb.Listeners[0].Name != "TCP:80" || len(lb.Pools) != 2 || len(lb.Pools[0].Members) != 2 {
		t.Fatalf("listeners %+v, pools %+v", lb.Listeners, lb.Pools)
	}
	if lb.Pools[0].Members[0].ID == "" || lb.Pools[0].Members[0].ProvisioningStatus != "PENDING_CREATE" {
		t.Errorf("member %+v", lb.Pools[0].Members[0])
	}
	for c, n := range map[string]int{LoadBalancers: 1, Listeners: 2, Pools: 2, Members: 2} {
		if f.Count(c) != n {
			t.Errorf("%d %s, want %d", f.Count(c), c, n)
		}
	}

	pages, err := listeners.List(c, listeners.ListOpts{LoadbalancerID: lb.ID}).AllPages(ctx)
	must(t, err)
	ls, _ := listeners.ExtractListeners(pages)
	byName := map[string]listeners.Listener{}
	for _, l := range ls {
		byName[l.Name] = l
		if len(l.Loadbalancers) != 1 || l.Loadbalancers[0].ID != lb.ID || l.DefaultPoolID == "" {
			t.Errorf("listener %+v", l)
		}
	}
	tcp := byName["TCP:80"]
	pool, err := pools.Get(ctx, c, tcp.DefaultPoolID).Extract()
	must(t, err)
	if pool.Name != "TCP:80" || len(pool.Listeners) != 1 || pool.Listeners[0].ID != tcp.ID ||
		len(pool.Loadbalancers) != 1 || pool.Loadbalancers[0].ID != lb.ID || len(pool.Members) != 2 {
		t.Errorf("pool %+v", pool)
	}
	pages, err = pools.ListMembers(c, pool.ID, nil).AllPages(ctx)
	must(t, err)
	ms, _ := pools.ExtractMembers(pages)
	// Octavia keeps the subnet as given: the ovn provider's fallback to
	// the VIP subnet is not written back.
	if len(ms) != 2 || ms[0].Address != "10.1.0.5" || ms[0].ProtocolPort != 8080 || ms[0].SubnetID != podSubnet ||
		ms[0].Name != "pod-a" || ms[1].SubnetID != "" || ms[1].OperatingStatus != "NO_MONITOR" {
		t.Errorf("members %+v", ms)
	}

	// Without vip_address the VIP is allocated, and not twice.
	opts := fullLB("")
	opts.Listeners = nil
	other, err := loadbalancers.Create(ctx, c, opts).Extract()
	must(t, err)
	if other.VipAddress == "" || other.VipAddress == lb.VipAddress || len(other.Listeners) != 0 {
		t.Errorf("second load balancer %+v", other)
	}
}

func TestCreateRefused(t *testing.T) {
	tests := []struct {
		name   string
		change func(o *loadbalancers.CreateOpts)
		code   int
		msg    string
		leaks  bool // the VIP port stays behind
	}{
		{"unnamed pool", func(o *loadbalancers.CreateOpts) { o.Listeners[0].DefaultPool.Name = "" },
			400, "Validation failure: Pools must be named when creating a fully populated loadbalancer.", true},
		{"round robin", func(o *loadbalancers.CreateOpts) { o.Listeners[1].DefaultPool.LBMethod = pools.LBMethodRoundRobin },
			501, "Provider 'ovn' does not support a requested option: OVN provider does not support ROUND_ROBIN algorithm", true},
		{"allowed cidrs", func(o *loadbalancers.CreateOpts) { o.Listeners[0].AllowedCIDRs = []string{"10.0.0.0/8"} },
			501, "OVN provider does not support allowed_cidrs option", true},
		{"HTTP", func(o *loadbalancers.CreateOpts) {
			o.Listeners[0].Protocol, o.Listeners[0].DefaultPool.Protocol = listeners.ProtocolHTTP, pools.ProtocolHTTP
		}, 501, "OVN provider does not support HTTP protocol", true},
		{"same protocol and port", func(o *loadbalancers.CreateOpts) {
			o.Listeners[1].Protocol, o.Listeners[1].DefaultPool.Protocol = listeners.ProtocolTCP, pools.ProtocolTCP
		}, 409, "Another Listener on this Load Balancer is already using protocol TCP and protocol_port 80", true},
		{"pool protocol", func(o *loadbalancers.CreateOpts) { o.Listeners[1].DefaultPool.Protocol = pools.ProtocolTCP },
			400, "The pool protocol 'TCP' is invalid while the listener protocol is 'UDP'.", true},
		{"pool names", func(o *loadbalancers.CreateOpts) { o.Listeners[1].DefaultPool.Name = "TCP:80" },
			400, "Pool names must be unique when creating a fully populated loadbalancer.", true},
		{"duplicate member", func(o *loadbalancers.CreateOpts) {
			o.Listeners[0].DefaultPool.Members[1].Address = "10.1.0.5"
		}, 409, "Another member on this pool is already using ip 10.1.0.5 on protocol_port 8080", true},
		{"no VIP", func(o *loadbalancers.CreateOpts) { o.VipSubnetID = "" },
			400, "VIP must contain one of: vip_port_id, vip_network_id, vip_subnet_id.", false},
		{"provider", func(o *loadbalancers.CreateOpts) { o.Provider = "amphora" },
			400, "Provider 'amphora' is not enabled.", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := New(t)
			c := f.Client(t)
			opts := fullLB("10.0.0.100")
			tt.change(&opts)
			_, err := loadbalancers.Create(ctx, c, opts).Extract()
			wantFailure(t, err, tt.code, tt.msg)
			for _, coll := range []string{LoadBalancers, Listeners, Pools, Members} {
				if f.Count(coll) != 0 {
					t.Errorf("%d %s stored", f.Count(coll), coll)
				}
			}
			if _, leaked := f.LeakedVIPs()["10.0.0.100"]; leaked != tt.leaks {
				t.Fatalf("leaked VIPs %v", f.LeakedVIPs())
			}
			_, err = loadbalancers.Create(ctx, c, fullLB("10.0.0.100")).Extract()
			if tt.leaks {
				wantFailure(t, err, 500, "Provider 'ovn' reports error: IP address 10.0.0.100 already allocated")
				f.ReleaseVIP("10.0.0.100")
				_, err = loadbalancers.Create(ctx, c, fullLB("10.0.0.100")).Extract()
			}
			must(t, err)
		})
	}
}

func TestVIPInUse(t *testing.T) {
	f := New(t)
	c := f.Client(t)
	lb, err := loadbalancers.Create(ctx, c, fullLB("10.0.0.100")).Extract()
	must(t, err)
	_, err = loadbalancers.Create(ctx, c, fullLB("10.0.0.100")).Extract()
	wantFailure(t, err, 500, "IP address 10.0.0.100 already allocated in subnet "+vipSubnet)
	f.Settle()
	must(t, loadbalancers.Delete(ctx, c, lb.ID, loadbalancers.DeleteOpts{Cascade: true}).ExtractErr())
	_, err = loadbalancers.Create(ctx, c, fullLB("10.0.0.100")).Extract()
	must(t, err)
}

func TestPendingUntilGets(t *testing.T) {
	tests := []struct {
		name     string
		gets     int  // ActiveAfterGets
		instant  bool // Instant
		blocked  bool // writes right after a write get 409
		pendings int  // GETs that show PENDING_*
	}{
		{name: "default", gets: 1, blocked: true, pendings: 1},
		{name: "three GETs", gets: 3, blocked: true, pendings: 3},
		{name: "zero GETs", gets: 0, blocked: true, pendings: 0},
		{name: "instant", gets: 1, instant: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := New(t)
			f.ActiveAfterGets, f.Instant = tt.gets, tt.instant
			c := f.Client(t)
			opts := fullLB("")
			opts.Listeners = nil
			lb, err := loadbalancers.Create(ctx, c, opts).Extract()
			must(t, err)
			if lb.ProvisioningStatus != "PENDING_CREATE" {
				t.Fatalf("created %s", lb.ProvisioningStatus)
			}
			lopts := listeners.CreateOpts{LoadbalancerID: lb.ID, Protocol: listeners.ProtocolTCP, ProtocolPort: 80}
			settle := func(pending string) {
				t.Helper()
				for i := 0; i < tt.pendings; i++ {
					got, err := loadbalancers.Get(ctx, c, lb.ID).Extract()
					must(t, err)
					if got.ProvisioningStatus != pending {
						t.Fatalf("GET %d: %s, want %s", i, got.ProvisioningStatus, pending)
					}
				}
				got, err := loadbalancers.Get(ctx, c, lb.ID).Extract()
				must(t, err)
				if got.ProvisioningStatus != "ACTIVE" || got.OperatingStatus != "ONLINE" {
					t.Fatalf("after %d GETs: %s/%s", tt.pendings, got.ProvisioningStatus, got.OperatingStatus)
				}
			}
			if tt.blocked {
				_, err = listeners.Create(ctx, c, lopts).Extract()
				wantFailure(t, err, 409, "Load Balancer "+lb.ID+" is immutable and cannot be updated.")
			}
			settle("PENDING_CREATE")
			l, err := listeners.Create(ctx, c, lopts).Extract()
			must(t, err)
			if l.ProvisioningStatus != "PENDING_CREATE" || l.OperatingStatus != "OFFLINE" {
				t.Errorf("listener %s/%s", l.ProvisioningStatus, l.OperatingStatus)
			}
			if tt.blocked {
				_, err = pools.Create(ctx, c, pools.CreateOpts{ListenerID: l.ID, Protocol: pools.ProtocolTCP,
					LBMethod: pools.LBMethodSourceIpPort}).Extract()
				wantFailure(t, err, 409, "is immutable and cannot be updated.")
				err = loadbalancers.Delete(ctx, c, lb.ID, loadbalancers.DeleteOpts{Cascade: true}).ExtractErr()
				wantFailure(t, err, 409, "Invalid state PENDING_UPDATE of loadbalancer resource "+lb.ID)
			}
			settle("PENDING_UPDATE")
			got, err := listeners.Get(ctx, c, l.ID).Extract()
			must(t, err)
			if got.ProvisioningStatus != "ACTIVE" || got.OperatingStatus != "ONLINE" {
				t.Errorf("listener after settling: %s/%s", got.ProvisioningStatus, got.OperatingStatus)
			}
		})
	}
}

func TestDeleteLB(t *testing.T) {
	tests := []struct {
		name     string
		children bool
		status   string
		cascade  bool
		code     int // 0: deleted
		msg      string
	}{
		{name: "children without cascade", children: true, code: 400, msg: "Cannot delete Load Balancer %s - it has children"},
		{name: "cascade", children: true, cascade: true},
		{name: "no children", cascade: false},
		{name: "pending", status: "PENDING_UPDATE", cascade: true, code: 409, msg: "Invalid state PENDING_UPDATE of loadbalancer resource %s"},
		{name: "error", status: "ERROR", children: true, cascade: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := New(t)
			c := f.Client(t)
			lb := f.Add(LoadBalancers, Object{"vip_subnet_id": vipSubnet})
			if tt.children {
				lb, _, _, _ = seed(f)
			}
			if tt.status != "" {
				f.Update(LoadBalancers, lb, Object{"provisioning_status": tt.status})
			}
			err := loadbalancers.Delete(ctx, c, lb, loadbalancers.DeleteOpts{Cascade: tt.cascade}).ExtractErr()
			if tt.code != 0 {
				wantFailure(t, err, tt.code, fmt.Sprintf(tt.msg, lb))
				return
			}
			must(t, err)
			_, err = loadbalancers.Get(ctx, c, lb).Extract()
			wantFailure(t, err, 404, "Load Balancer "+lb+" not found.")
			if f.Count(Listeners)+f.Count(Pools)+f.Count(Members) != 0 {
				t.Error("children left")
			}
		})
	}
}
