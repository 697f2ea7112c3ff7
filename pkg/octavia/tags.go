package octavia

import (
	"context"
	"fmt"

	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/listeners"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/loadbalancers"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/pools"

	"github.com/kuryr-k8s/kuryr/pkg/openstack"
)

// Kinds of the Octavia objects AddTags tags.
const (
	KindLoadBalancer = "loadbalancer"
	KindListener     = "listener"
	KindPool         = "pool"
)

// AddTags gives an Octavia object tags, keeping those it has: one read,
// and one write if any is missing (then the load balancer is briefly
// PENDING_UPDATE; a write while it is not ACTIVE is refused: Busy). It
// returns whether it wrote. Tags are API 2.5 (every supported Octavia).
// ovn-octavia-provider (8.0) never answers an update of a listener or a
// pool that changes only its tags: the object stays PENDING_UPDATE; tag
// load balancers only where that provider may serve them.
func (c *Client) AddTags(ctx context.Context, kind, id string, tags []string) (bool, error) {
	have, err := c.tagsOf(ctx, kind, id)
	if err != nil {
		return false, err
	}
	want, missing := openstack.WithTags(have, tags)
	if !missing {
		return false, nil
	}
	switch kind {
	case KindLoadBalancer:
		_, err = loadbalancers.Update(ctx, c.sc, id, loadbalancers.UpdateOpts{Tags: &want}).Extract()
	case KindListener:
		_, err = listeners.Update(ctx, c.sc, id, listeners.UpdateOpts{Tags: &want}).Extract()
	default:
		_, err = pools.Update(ctx, c.sc, id, pools.UpdateOpts{Tags: &want}).Extract()
	}
	if err != nil {
		return false, fmt.Errorf("tag %s %s: %w", kind, id, err)
	}
	return true, nil
}

func (c *Client) tagsOf(ctx context.Context, kind, id string) ([]string, error) {
	switch kind {
	case KindLoadBalancer:
		lb, err := loadbalancers.Get(ctx, c.sc, id).Extract()
		if err != nil {
			return nil, fmt.Errorf("get load balancer %s: %w", id, err)
		}
		return lb.Tags, nil
	case KindListener:
		l, err := listeners.Get(ctx, c.sc, id).Extract()
		if err != nil {
			return nil, fmt.Errorf("get listener %s: %w", id, err)
		}
		return l.Tags, nil
	case KindPool:
		p, err := pools.Get(ctx, c.sc, id).Extract()
		if err != nil {
			return nil, fmt.Errorf("get pool %s: %w", id, err)
		}
		return p.Tags, nil
	}
	return nil, fmt.Errorf("octavia: no tags on %q", kind)
}
