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
	ListSubnets(ctx context.Context, project string) ([]neutron.Subnet, error)
}

// minRefresh bounds forced re-reads of the subnets.
const minRefresh = 5 * time.Second

// Subnets finds the Neutron subnet of endpoint addresses, from a list of
// the project's subnets read at most once per TTL (subnets come and go with
// namespaces, rarely), or sooner when an address is on none of them.
// Only the project's: other tenants' CIDRs may overlap.
type Subnets struct {
	Neutron subnetLister
	Project string
	TTL     time.Duration

	mu       sync.Mutex
	prefixes []prefixSubnet
	at       time.Time
}

type prefixSubnet struct {
	prefix netip.Prefix
	id     string
}

// Refresh reads the subnets again if the list is older than the TTL (with
// force, older than a few seconds).
func (s *Subnets) Refresh(ctx context.Context, force bool) error {
	ttl := s.TTL
	if force {
		ttl = minRefresh
	}
	s.mu.Lock()
	fresh := !s.at.IsZero() && time.Since(s.at) < ttl
	s.mu.Unlock()
	if fresh {
		return nil
	}
	list, err := s.Neutron.ListSubnets(ctx, s.Project)
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
