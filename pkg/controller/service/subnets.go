package service

import (
	"context"
	"net/netip"
	"sync"
	"time"

	"github.com/kuryr-k8s/kuryr/pkg/neutron"
)

// subnetLister is the Neutron seam of the subnet index.
type subnetLister interface {
	ListSubnets(ctx context.Context) ([]neutron.Subnet, error)
}

// Subnets finds the Neutron subnet of endpoint addresses, from a list of
// every subnet read at most once per ttl (subnets come and go with
// namespaces, rarely).
type Subnets struct {
	Neutron subnetLister
	TTL     time.Duration

	mu       sync.Mutex
	prefixes []prefixSubnet
	at       time.Time
}

type prefixSubnet struct {
	prefix netip.Prefix
	id     string
}

// Refresh reads the subnets again if the list is older than the TTL.
func (s *Subnets) Refresh(ctx context.Context) error {
	s.mu.Lock()
	fresh := !s.at.IsZero() && time.Since(s.at) < s.TTL
	s.mu.Unlock()
	if fresh {
		return nil
	}
	list, err := s.Neutron.ListSubnets(ctx)
	if err != nil {
		return err
	}
	var ps []prefixSubnet
	for _, sn := range list {
		if p, err := netip.ParsePrefix(sn.CIDR); err == nil {
			ps = append(ps, prefixSubnet{prefix: p, id: sn.ID})
		}
	}
	s.mu.Lock()
	s.prefixes, s.at = ps, time.Now()
	s.mu.Unlock()
	return nil
}

// Lookup returns the id of the most specific subnet holding ip, or "".
func (s *Subnets) Lookup(ip netip.Addr) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	best, bits := "", -1
	for _, p := range s.prefixes {
		if p.prefix.Contains(ip) && p.prefix.Bits() > bits {
			best, bits = p.id, p.prefix.Bits()
		}
	}
	return best
}
