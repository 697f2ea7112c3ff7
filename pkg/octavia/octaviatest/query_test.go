package octaviatest

import (
	"net/http"
	"testing"

	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/loadbalancers"
)

func TestListFilters(t *testing.T) {
	f := New(t)
	c := f.Client(t)
	f.Add(LoadBalancers, Object{"name": "n1", "tags": []string{"kuryr", "a"}, "vip_address": "10.0.0.1", "project_id": "p1"})
	f.Add(LoadBalancers, Object{"name": "n2", "tags": []string{"kuryr", "b"}, "project_id": "p1"})
	f.Add(LoadBalancers, Object{"name": "n3", "provisioning_status": "ERROR"})
	tests := []struct {
		opts loadbalancers.ListOpts
		want []string
	}{
		{loadbalancers.ListOpts{}, []string{"n1", "n2", "n3"}},
		{loadbalancers.ListOpts{Tags: []string{"kuryr"}}, []string{"n1", "n2"}},
		{loadbalancers.ListOpts{Tags: []string{"kuryr", "a"}}, []string{"n1"}},
		{loadbalancers.ListOpts{TagsAny: []string{"a", "b"}}, []string{"n1", "n2"}},
		{loadbalancers.ListOpts{TagsNot: []string{"kuryr", "a"}}, []string{"n2", "n3"}},
		{loadbalancers.ListOpts{TagsNotAny: []string{"a", "b"}}, []string{"n3"}},
		{loadbalancers.ListOpts{Name: "n2"}, []string{"n2"}},
		{loadbalancers.ListOpts{VipAddress: "10.0.0.1"}, []string{"n1"}},
		{loadbalancers.ListOpts{ProjectID: "p1", Tags: []string{"b"}}, []string{"n2"}},
		{loadbalancers.ListOpts{ProvisioningStatus: "ERROR"}, []string{"n3"}},
	}
	for _, tt := range tests {
		pages, err := loadbalancers.List(c, tt.opts).AllPages(ctx)
		must(t, err)
		lbs, err := loadbalancers.ExtractLoadBalancers(pages)
		must(t, err)
		var got []string
		for _, lb := range lbs {
			got = append(got, lb.Name)
		}
		if len(got) != len(tt.want) || len(got) > 0 && (got[0] != tt.want[0] || got[len(got)-1] != tt.want[len(tt.want)-1]) {
			t.Errorf("%+v: %v, want %v", tt.opts, got, tt.want)
		}
	}
	resp, err := http.Get(f.URL() + "/v2/lbaas/loadbalancers?bogus=1")
	must(t, err)
	_ = resp.Body.Close()
	if resp.StatusCode != 400 {
		t.Errorf("unknown filter: %d", resp.StatusCode)
	}
}

func TestStatusTree(t *testing.T) {
	f := New(t)
	c := f.Client(t)
	lb, listener, pool, member := seed(f)
	tree, err := loadbalancers.GetStatuses(ctx, c, lb).Extract()
	must(t, err)
	s := tree.Loadbalancer
	if s.ID != lb || s.ProvisioningStatus != "ACTIVE" || len(s.Listeners) != 1 || s.Listeners[0].ID != listener ||
		len(s.Listeners[0].Pools) != 1 || s.Listeners[0].Pools[0].ID != pool ||
		len(s.Listeners[0].Pools[0].Members) != 1 || s.Listeners[0].Pools[0].Members[0].ID != member ||
		s.Listeners[0].Pools[0].Members[0].Address != "10.1.0.5" {
		t.Errorf("status tree %+v", s)
	}
	_, err = loadbalancers.GetStatuses(ctx, c, "nope").Extract()
	wantFailure(t, err, 404, "Load Balancer nope not found.")
}

func TestHooksAndCounts(t *testing.T) {
	f := New(t)
	c := f.Client(t)
	f.Fail = func(method, collection string) (int, string) {
		if method == "POST" && collection == LoadBalancers {
			return 503, "busy"
		}
		return 0, ""
	}
	_, err := loadbalancers.Create(ctx, c, fullLB("")).Extract()
	if code, _ := failure(err); code != 503 || f.Count(LoadBalancers) != 0 {
		t.Fatalf("failed create: %v, %d stored", err, f.Count(LoadBalancers))
	}
	f.Fail = nil
	f.Unanswered = func(method, collection string) (int, string) {
		if method == "POST" {
			return 500, "lost"
		}
		return 0, ""
	}
	_, err = loadbalancers.Create(ctx, c, fullLB("")).Extract()
	if code, _ := failure(err); code != 500 || f.Count(LoadBalancers) != 1 {
		t.Fatalf("unanswered create: %v, %d stored", err, f.Count(LoadBalancers))
	}
	_, err = loadbalancers.List(c, nil).AllPages(ctx)
	must(t, err)
	if f.Requests["POST loadbalancers"] != 2 || f.Requests["GET loadbalancers"] != 1 || f.Writes() != 2 {
		t.Errorf("requests %v, writes %d", f.Requests, f.Writes())
	}
	for path, code := range map[string]int{"/v2/lbaas/loadbalancers": 200, "/v2.0/lbaas/pools": 200, "/v2/lbaas/nope": 404} {
		resp, err := http.Get(f.URL() + path)
		must(t, err)
		_ = resp.Body.Close()
		if resp.StatusCode != code {
			t.Errorf("GET %s: %d, want %d", path, resp.StatusCode, code)
		}
	}
}
