package octavia

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/listeners"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/loadbalancers"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/pools"
)

// LoadBalancer is what kuryr reads of an Octavia load balancer.
type LoadBalancer struct {
	ID, Name           string
	VIPAddress         string
	VIPPortID          string
	VIPSubnetID        string
	Provider           string
	ProvisioningStatus string
	OperatingStatus    string
	Tags               []string
	CreatedAt          time.Time
	// UpdatedAt: the last change of the load balancer (its status
	// included); zero when Octavia never updated it.
	UpdatedAt time.Time
}

// LoadBalancerSpec is a whole load balancer, created in one call.
type LoadBalancerSpec struct {
	Name, Description string
	VIPAddress        string
	VIPSubnetID       string
	Provider          string
	ProjectID         string
	Tags              []string
	Listeners         []ListenerSpec
}

func lbOf(l *loadbalancers.LoadBalancer) LoadBalancer {
	return LoadBalancer{ID: l.ID, Name: l.Name, VIPAddress: l.VipAddress, VIPPortID: l.VipPortID,
		VIPSubnetID: l.VipSubnetID, Provider: l.Provider, ProvisioningStatus: l.ProvisioningStatus,
		OperatingStatus: l.OperatingStatus, Tags: l.Tags, CreatedAt: l.CreatedAt, UpdatedAt: l.UpdatedAt}
}

// FindLoadBalancers lists the load balancers carrying all of tags.
func (c *Client) FindLoadBalancers(ctx context.Context, tags []string) ([]LoadBalancer, error) {
	pages, err := loadbalancers.List(c.sc, loadbalancers.ListOpts{Tags: tags}).AllPages(ctx)
	if err != nil {
		return nil, fmt.Errorf("list load balancers tagged %v: %w", tags, err)
	}
	all, err := loadbalancers.ExtractLoadBalancers(pages)
	if err != nil {
		return nil, fmt.Errorf("list load balancers: %w", err)
	}
	out := make([]LoadBalancer, 0, len(all))
	for i := range all {
		out = append(out, lbOf(&all[i]))
	}
	return out, nil
}

// GetLoadBalancer returns a load balancer, or nil when it is gone.
func (c *Client) GetLoadBalancer(ctx context.Context, id string) (*LoadBalancer, error) {
	l, err := loadbalancers.Get(ctx, c.sc, id).Extract()
	if gophercloud.ResponseCodeIs(err, http.StatusNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("get load balancer %s: %w", id, err)
	}
	lb := lbOf(l)
	return &lb, nil
}

// CreateLoadBalancer creates a load balancer with its listeners, pools and
// members in one call (Octavia's fully populated create).
func (c *Client) CreateLoadBalancer(ctx context.Context, s LoadBalancerSpec) (*LoadBalancer, error) {
	opts := loadbalancers.CreateOpts{Name: s.Name, Description: s.Description, VipAddress: s.VIPAddress,
		VipSubnetID: s.VIPSubnetID, Provider: s.Provider, ProjectID: s.ProjectID, Tags: s.Tags}
	create := lbCreate{opts: opts}
	for _, l := range s.Listeners {
		create.opts.Listeners = append(create.opts.Listeners, l.opts(""))
		create.timeout = append(create.timeout, l.Pool.AffinityTimeout)
	}
	l, err := loadbalancers.Create(ctx, c.sc, create).Extract()
	if err != nil {
		return nil, fmt.Errorf("create load balancer %s (VIP %s): %w", s.Name, s.VIPAddress, err)
	}
	lb := lbOf(l)
	return &lb, nil
}

// DeleteLoadBalancer deletes a load balancer and everything in it.
func (c *Client) DeleteLoadBalancer(ctx context.Context, id string) error {
	err := loadbalancers.Delete(ctx, c.sc, id, loadbalancers.DeleteOpts{Cascade: true}).ExtractErr()
	if err = ignoreNotFound(err); err != nil {
		return fmt.Errorf("delete load balancer %s: %w", id, err)
	}
	return nil
}

func (l ListenerSpec) opts(lbID string) listeners.CreateOpts {
	p := l.Pool.opts()
	return listeners.CreateOpts{LoadbalancerID: lbID, Name: l.Name, Protocol: listeners.Protocol(l.Protocol),
		ProtocolPort: int(l.Port), Tags: l.Tags, DefaultPool: &p}
}

func (p PoolSpec) opts() pools.CreateOpts {
	o := pools.CreateOpts{Name: p.Name, Protocol: pools.Protocol(p.Protocol), LBMethod: pools.LBMethod(p.Algorithm), Tags: p.Tags}
	for _, m := range p.Members {
		o.Members = append(o.Members, pools.CreateMemberOpts{Address: m.Address, ProtocolPort: int(m.Port),
			Name: m.Name, SubnetID: m.SubnetID})
	}
	return o
}
