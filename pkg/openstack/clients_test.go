package openstack

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/loadbalancers"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/networks"
)

func TestNoAuthClientsUseVersionedPaths(t *testing.T) {
	var paths []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		paths = append(paths, r.URL.Path)
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/v2.0/networks":
			_, _ = w.Write([]byte(`{"networks": [{"id": "n1", "name": "pods"}]}`))
		case "/v2.0/lbaas/loadbalancers":
			_, _ = w.Write([]byte(`{"loadbalancers": [{"id": "lb1"}]}`))
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()

	for _, base := range []string{srv.URL, srv.URL + "/"} {
		paths = nil
		c, err := NewNoAuthClients(Endpoints{Network: base, LoadBalancer: base}, 5*time.Second)
		if err != nil {
			t.Fatalf("%s: %v", base, err)
		}
		pages, err := networks.List(c.Network, nil).AllPages(context.Background())
		if err != nil {
			t.Fatalf("%s: list networks: %v", base, err)
		}
		nets, _ := networks.ExtractNetworks(pages)
		if len(nets) != 1 || nets[0].Name != "pods" {
			t.Errorf("%s: networks = %+v", base, nets)
		}
		lbPages, err := loadbalancers.List(c.LoadBalancer, nil).AllPages(context.Background())
		if err != nil {
			t.Fatalf("%s: list load balancers: %v", base, err)
		}
		lbs, _ := loadbalancers.ExtractLoadBalancers(lbPages)
		if len(lbs) != 1 || lbs[0].ID != "lb1" {
			t.Errorf("%s: load balancers = %+v", base, lbs)
		}
		if len(paths) != 2 {
			t.Errorf("%s: requests = %v", base, paths)
		}
	}
}

func TestNoAuthClientsValidation(t *testing.T) {
	tests := []struct {
		name    string
		ep      Endpoints
		wantErr bool
		wantLB  bool
	}{
		{name: "network required", ep: Endpoints{LoadBalancer: "http://x"}, wantErr: true},
		{name: "network only", ep: Endpoints{Network: "http://x"}},
		{name: "both", ep: Endpoints{Network: "http://x", LoadBalancer: "http://y"}, wantLB: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := NewNoAuthClients(tt.ep, time.Second)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tt.wantErr)
			}
			if err == nil && (c.LoadBalancer != nil) != tt.wantLB {
				t.Errorf("load balancer client present = %v, want %v", c.LoadBalancer != nil, tt.wantLB)
			}
		})
	}
}
