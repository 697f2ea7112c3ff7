package neutron

import (
	"context"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"
)

// Info serves subnet and network details from memory for ttl: every pod port
// needs its subnet's CIDR, gateway, routes and DNS and its network's MTU,
// which change rarely, so reading them per pod would double the Neutron calls
// a pod costs. Concurrent misses share one request: a burst of pods after a
// restart would otherwise read the same subnet once per pod.
type Info struct {
	c        *Client
	ttl      time.Duration
	flight   singleflight.Group
	mu       sync.Mutex
	subnets  map[string]cached[*Subnet]
	networks map[string]cached[*Network]
	pools    map[string]cached[[]string]
}

type cached[T any] struct {
	v  T
	at time.Time
}

// NewInfo returns a cache in front of c.
func NewInfo(c *Client, ttl time.Duration) *Info {
	return &Info{c: c, ttl: ttl, subnets: map[string]cached[*Subnet]{}, networks: map[string]cached[*Network]{},
		pools: map[string]cached[[]string]{}}
}

// Subnet returns a subnet, from memory when fresh.
func (i *Info) Subnet(ctx context.Context, id string) (*Subnet, error) {
	return lookup(i, i.subnets, "subnet/"+id, id, func() (*Subnet, error) { return i.c.GetSubnet(ctx, id) })
}

// Network returns a network, from memory when fresh.
func (i *Info) Network(ctx context.Context, id string) (*Network, error) {
	return lookup(i, i.networks, "network/"+id, id, func() (*Network, error) { return i.c.GetNetwork(ctx, id) })
}

// ForgetNetwork drops a network and its subnets from memory: the next
// Network and Subnet read them (a subnet added, renamed or tagged since).
func (i *Info) ForgetNetwork(id string) {
	var subnets []string
	i.mu.Lock()
	delete(i.networks, id)
	for sid, e := range i.subnets {
		if e.v != nil && e.v.NetworkID == id {
			delete(i.subnets, sid)
			subnets = append(subnets, sid)
		}
	}
	i.mu.Unlock()
	i.flight.Forget("network/" + id) // a read in flight is not joined
	for _, sid := range subnets {
		i.flight.Forget("subnet/" + sid)
	}
}

// SubnetPoolPrefixes returns a subnet pool's prefixes, from memory when fresh.
func (i *Info) SubnetPoolPrefixes(ctx context.Context, id string) ([]string, error) {
	return lookup(i, i.pools, "subnetpool/"+id, id, func() ([]string, error) { return i.c.SubnetPoolPrefixes(ctx, id) })
}

func lookup[T any](i *Info, m map[string]cached[T], key, id string, get func() (T, error)) (T, error) {
	i.mu.Lock()
	e, ok := m[id]
	i.mu.Unlock()
	if ok && time.Since(e.at) < i.ttl {
		return e.v, nil
	}
	v, err, _ := i.flight.Do(key, func() (any, error) {
		v, err := get()
		if err != nil {
			return v, err
		}
		i.mu.Lock()
		m[id] = cached[T]{v: v, at: time.Now()}
		i.mu.Unlock()
		return v, nil
	})
	return v.(T), err
}
