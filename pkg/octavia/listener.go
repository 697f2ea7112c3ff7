package octavia

import (
	"context"
	"fmt"

	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/listeners"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/pools"
)

// Listener is what kuryr reads of a listener.
type Listener struct {
	ID, Name           string
	Protocol           string
	Port               int32
	DefaultPoolID      string
	ProvisioningStatus string
	OperatingStatus    string
}

// Pool is what kuryr reads of a pool.
type Pool struct {
	ID, Name  string
	Protocol  string
	Algorithm string
	// AffinityTimeout is the pool's SOURCE_IP session persistence timeout
	// in seconds; 0: no SOURCE_IP persistence.
	AffinityTimeout    int32
	ListenerIDs        []string
	ProvisioningStatus string
	OperatingStatus    string
}

// Member is what kuryr reads of a pool member.
type Member struct {
	ID, Name           string
	Address            string
	Port               int32
	SubnetID           string
	ProvisioningStatus string
	OperatingStatus    string
}

// ListenerSpec is a listener with its default pool.
type ListenerSpec struct {
	Name     string
	Protocol string
	Port     int32
	Tags     []string
	Pool     PoolSpec
}

// PoolSpec is a pool with its members.
type PoolSpec struct {
	Name      string
	Protocol  string
	Algorithm string
	// AffinityTimeout, when positive, asks for SOURCE_IP session
	// persistence with this timeout in seconds (ClientIP affinity).
	AffinityTimeout int32
	Tags            []string
	Members         []MemberSpec
}

// MemberSpec is one member.
type MemberSpec struct {
	Name     string
	Address  string
	Port     int32
	SubnetID string
}

// Listeners lists a load balancer's listeners.
func (c *Client) Listeners(ctx context.Context, lbID string) ([]Listener, error) {
	pages, err := listeners.List(c.sc, listeners.ListOpts{LoadbalancerID: lbID}).AllPages(ctx)
	if err != nil {
		return nil, fmt.Errorf("list listeners of %s: %w", lbID, err)
	}
	all, err := listeners.ExtractListeners(pages)
	if err != nil {
		return nil, fmt.Errorf("list listeners of %s: %w", lbID, err)
	}
	out := make([]Listener, 0, len(all))
	for _, l := range all {
		out = append(out, Listener{ID: l.ID, Name: l.Name, Protocol: l.Protocol, Port: int32(l.ProtocolPort),
			DefaultPoolID: l.DefaultPoolID, ProvisioningStatus: l.ProvisioningStatus, OperatingStatus: l.OperatingStatus})
	}
	return out, nil
}

// Pools lists a load balancer's pools.
func (c *Client) Pools(ctx context.Context, lbID string) ([]Pool, error) {
	pages, err := pools.List(c.sc, pools.ListOpts{LoadbalancerID: lbID}).AllPages(ctx)
	if err != nil {
		return nil, fmt.Errorf("list pools of %s: %w", lbID, err)
	}
	all, err := pools.ExtractPools(pages)
	if err != nil {
		return nil, fmt.Errorf("list pools of %s: %w", lbID, err)
	}
	aff, err := affinities(pages)
	if err != nil {
		return nil, fmt.Errorf("list pools of %s: %w", lbID, err)
	}
	out := make([]Pool, 0, len(all))
	for _, p := range all {
		pl := Pool{ID: p.ID, Name: p.Name, Protocol: p.Protocol, Algorithm: p.LBMethod, ProvisioningStatus: p.ProvisioningStatus,
			OperatingStatus: p.OperatingStatus, AffinityTimeout: aff[p.ID]}
		for _, l := range p.Listeners {
			pl.ListenerIDs = append(pl.ListenerIDs, l.ID)
		}
		out = append(out, pl)
	}
	return out, nil
}

// Members lists a pool's members.
func (c *Client) Members(ctx context.Context, poolID string) ([]Member, error) {
	pages, err := pools.ListMembers(c.sc, poolID, pools.ListMembersOpts{}).AllPages(ctx)
	if err != nil {
		return nil, fmt.Errorf("list members of pool %s: %w", poolID, err)
	}
	all, err := pools.ExtractMembers(pages)
	if err != nil {
		return nil, fmt.Errorf("list members of pool %s: %w", poolID, err)
	}
	out := make([]Member, 0, len(all))
	for _, m := range all {
		out = append(out, Member{ID: m.ID, Name: m.Name, Address: m.Address, Port: int32(m.ProtocolPort),
			SubnetID: m.SubnetID, ProvisioningStatus: m.ProvisioningStatus, OperatingStatus: m.OperatingStatus})
	}
	return out, nil
}

// CreateListener creates a listener alone: Octavia answers 500 to a
// listener POST with a default_pool (only a load balancer create takes
// nested objects), so its pool is created next and its members after that.
func (c *Client) CreateListener(ctx context.Context, lbID string, l ListenerSpec) error {
	o := l.opts(lbID)
	o.DefaultPool = nil
	if _, err := listeners.Create(ctx, c.sc, o).Extract(); err != nil {
		return fmt.Errorf("create listener %s on %s: %w", l.Name, lbID, err)
	}
	return nil
}

// DeleteListener deletes a listener (its pool stays: delete it first).
func (c *Client) DeleteListener(ctx context.Context, id string) error {
	if err := ignoreNotFound(listeners.Delete(ctx, c.sc, id).ExtractErr()); err != nil {
		return fmt.Errorf("delete listener %s: %w", id, err)
	}
	return nil
}

// CreatePool creates a listener's default pool, empty: Octavia answers 500
// to a pool POST with members; SetMembers fills it once it is ACTIVE.
func (c *Client) CreatePool(ctx context.Context, listenerID string, p PoolSpec) error {
	o := p.opts()
	o.ListenerID, o.Members = listenerID, nil
	if _, err := pools.Create(ctx, c.sc, poolCreate{opts: o, timeout: p.AffinityTimeout}).Extract(); err != nil {
		return fmt.Errorf("create pool %s for listener %s: %w", p.Name, listenerID, err)
	}
	return nil
}

// DeletePool deletes a pool and its members.
func (c *Client) DeletePool(ctx context.Context, id string) error {
	if err := ignoreNotFound(pools.Delete(ctx, c.sc, id).ExtractErr()); err != nil {
		return fmt.Errorf("delete pool %s: %w", id, err)
	}
	return nil
}

// SetMembers makes a pool's members exactly ms, in one call.
func (c *Client) SetMembers(ctx context.Context, poolID string, ms []MemberSpec) error {
	opts := make([]pools.BatchUpdateMemberOpts, 0, len(ms))
	for _, m := range ms {
		o := pools.BatchUpdateMemberOpts{Address: m.Address, ProtocolPort: int(m.Port)}
		if m.Name != "" {
			o.Name = &m.Name
		}
		if m.SubnetID != "" {
			o.SubnetID = &m.SubnetID
		}
		opts = append(opts, o)
	}
	if err := pools.BatchUpdateMembers(ctx, c.sc, poolID, opts).ExtractErr(); err != nil {
		return fmt.Errorf("update the %d members of pool %s: %w", len(ms), poolID, err)
	}
	return nil
}

// CreateMember adds one member to a pool.
func (c *Client) CreateMember(ctx context.Context, poolID string, m MemberSpec) error {
	o := pools.CreateMemberOpts{Address: m.Address, ProtocolPort: int(m.Port), Name: m.Name, SubnetID: m.SubnetID}
	if _, err := pools.CreateMember(ctx, c.sc, poolID, o).Extract(); err != nil {
		return fmt.Errorf("add member %s:%d to pool %s: %w", m.Address, m.Port, poolID, err)
	}
	return nil
}

// DeleteMember removes one member from a pool; one already gone is not an
// error.
func (c *Client) DeleteMember(ctx context.Context, poolID, memberID string) error {
	if err := ignoreNotFound(pools.DeleteMember(ctx, c.sc, poolID, memberID).ExtractErr()); err != nil {
		return fmt.Errorf("remove member %s from pool %s: %w", memberID, poolID, err)
	}
	return nil
}
