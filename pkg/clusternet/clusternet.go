// Package clusternet names the cloud's networks that reach pods without
// NAT: the subnets on the cluster's router (the pods', the Services', the
// nodes' management subnet, and the cloud's tenant networks whose VMs
// share the router), and the pods' subnet pool. Traffic from them is the
// NetworkPolicies' to decide (pods no policy isolates admit it, as the
// design's Use Case 1 wants); whatever else reaches a pod came through the
// external network, where LoadBalancer Services' loadBalancerSourceRanges
// decide. Several reconcilers read it, so it has a package of its own.
package clusternet

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"sync"
	"time"

	"github.com/kuryr-k8s/kuryr/pkg/neutron"
)

// reader is what the networks are read from (neutron.Client, with subnets
// through a cache).
type reader interface {
	RouterOf(ctx context.Context, subnet string) (string, error)
	RouterSubnets(ctx context.Context, router string) ([]string, error)
}

// subnets serves subnets and subnet pools, cached (neutron.Info).
type subnets interface {
	Subnet(ctx context.Context, id string) (*neutron.Subnet, error)
	SubnetPoolPrefixes(ctx context.Context, id string) ([]string, error)
}

// Source reads the cluster's networks, at most every TTL.
type Source struct {
	Neutron reader
	Info    subnets
	// Router is [namespace_subnet] pod_router, if set; the routers of
	// Subnets count as well.
	Router string
	// Subnets are the configured pod, service and node subnets.
	Subnets []string
	// Pools are the subnet pools pods' subnets come from.
	Pools []string
	TTL   time.Duration

	reading sync.Mutex // one read at a time: callers that find it stale meanwhile use what is known
	mu      sync.Mutex
	known   Networks
	readAt  time.Time
	// failed is the last read's error, if it failed, and failedAt when:
	// for failAgain after it, callers get it (or what was known) without
	// a read, so that they do not queue up behind failing reads one by one.
	failed   error
	failedAt time.Time
}

// failAgain is how long a failed read stands for the next ones.
const failAgain = 5 * time.Second

// Networks are the cluster's networks as last read.
type Networks struct {
	// Subnets are the subnets of the router(s), and the configured ones,
	// by id.
	Subnets map[string]netip.Prefix
	// Pools are the prefixes of the subnet pools.
	Pools []netip.Prefix
}

// Prefixes are all of them, sorted and without duplicates.
func (n Networks) Prefixes() []netip.Prefix {
	out := slices.Clone(n.Pools)
	for _, p := range n.Subnets {
		out = append(out, p)
	}
	slices.SortFunc(out, func(a, b netip.Prefix) int {
		if c := a.Addr().Compare(b.Addr()); c != 0 {
			return c
		}
		return a.Bits() - b.Bits()
	})
	return slices.Compact(out)
}

// Read returns the networks, read again once TTL has passed. A failed
// read serves the last one when there is one, and so does a read under
// way: only callers that know nothing yet wait for it (a read that Neutron
// is slow to answer must not hold every reconciler that needs the
// networks).
func (s *Source) Read(ctx context.Context) (Networks, error) {
	known, fresh := s.last()
	if fresh {
		return known, nil
	}
	if !s.reading.TryLock() {
		if known.Subnets != nil {
			return known, nil // being read again: what was known serves meanwhile
		}
		s.reading.Lock() // nothing known yet: wait for the read under way
	}
	defer s.reading.Unlock()
	known, young := s.last() // read meanwhile by another caller
	if young {
		return known, nil
	}
	err := s.recentFailure()
	var latest Networks
	if err == nil {
		if latest, err = s.read(ctx); err != nil {
			err = fmt.Errorf("the cluster's networks: %w", err)
		}
		s.mu.Lock()
		if err == nil {
			s.known, s.readAt, s.failed = latest, time.Now(), nil
		} else {
			s.failed, s.failedAt = err, time.Now()
		}
		s.mu.Unlock()
	}
	switch {
	case err == nil:
		return latest, nil
	case known.Subnets != nil:
		return known, nil
	default:
		return Networks{}, err
	}
}

// recentFailure is the last read's error if it failed within failAgain.
func (s *Source) recentFailure() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.failed != nil && time.Since(s.failedAt) < failAgain {
		return s.failed
	}
	return nil
}

// last is the networks last read, and whether they are younger than TTL.
func (s *Source) last() (Networks, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.known, s.known.Subnets != nil && time.Since(s.readAt) < s.TTL
}

func (s *Source) read(ctx context.Context) (Networks, error) {
	routers := []string{s.Router}
	ids := slices.DeleteFunc(slices.Clone(s.Subnets), func(id string) bool { return id == "" })
	for _, id := range ids {
		r, err := s.Neutron.RouterOf(ctx, id)
		if err != nil {
			return Networks{}, err
		}
		routers = append(routers, r)
	}
	slices.Sort(routers)
	for _, r := range slices.Compact(routers) {
		if r == "" {
			continue
		}
		attached, err := s.Neutron.RouterSubnets(ctx, r)
		if err != nil {
			return Networks{}, err
		}
		ids = append(ids, attached...)
	}
	n := Networks{Subnets: map[string]netip.Prefix{}}
	for _, id := range ids {
		sub, err := s.Info.Subnet(ctx, id)
		if err != nil {
			return Networks{}, err
		}
		if p, err := netip.ParsePrefix(sub.CIDR); err == nil {
			n.Subnets[id] = p.Masked()
		}
	}
	for _, id := range s.Pools {
		prefixes, err := s.Info.SubnetPoolPrefixes(ctx, id)
		if err != nil {
			return Networks{}, err
		}
		for _, c := range prefixes {
			if p, err := netip.ParsePrefix(c); err == nil {
				n.Pools = append(n.Pools, p.Masked())
			}
		}
	}
	return n, nil
}

// Strings are prefixes as CIDRs.
func Strings(ps []netip.Prefix) []string {
	out := make([]string, 0, len(ps))
	for _, p := range ps {
		out = append(out, p.String())
	}
	return out
}
