package loadbalancer

import (
	"fmt"
	"slices"
	"time"

	"github.com/kuryr-k8s/kuryr/pkg/octavia"
)

// An ACTIVE load balancer does not say that kuryr's last write is done.
// Octavia hands the ovn provider a pool delete as one request per member,
// then the pool, and a batch member update as one request per member; the
// provider (ovn-octavia-provider 8.0.0, OpenStack 2025.1) reports the load
// balancer, its listeners and pools ACTIVE after each. A look between two of
// those requests shows a pool being deleted ACTIVE with fewer members, or a
// batch half done, and Octavia takes a write then: seen on 2025.1, a second
// delete of a pool whose first was still under way left it PENDING_DELETE
// for good (its load balancer was replaced a minute later), and batches
// sent again and again replaced pools whose members were merely on their
// way. So after a write kuryr writes again only once Octavia shows the
// write's effect, or echoWait after it.
const (
	echoBase     = 3 * time.Second
	echoPerWrite = 2 * time.Second // the provider's time per request, under load
	echoMax      = time.Minute
	echoRequeue  = 500 * time.Millisecond
)

// echoWait is how long the provider may take over s: its requests (one per
// member a pool delete or a batch names) at echoPerWrite each.
func echoWait(s step, obs observed) time.Duration {
	n := 1
	switch s.kind {
	case deletePool:
		n += len(obs.members[s.id])
	case setMembers:
		n += len(obs.members[s.id]) + len(s.listener.Pool.Members)
	}
	return min(echoBase+time.Duration(n)*echoPerWrite, echoMax)
}

// shown says whether obs shows the effect of s. A write whose object is gone,
// or in ERROR, or whose pool has a member in ERROR, shows all it will.
func shown(s step, obs observed) bool {
	pool := slices.IndexFunc(obs.pools, func(p octavia.Pool) bool { return p.ID == s.id })
	switch s.kind {
	case deletePool:
		return pool < 0 || obs.pools[pool].ProvisioningStatus == octavia.StatusError
	case deleteListener:
		return !slices.ContainsFunc(obs.listeners, func(l octavia.Listener) bool {
			return l.ID == s.id && l.ProvisioningStatus != octavia.StatusError
		})
	case createListener:
		return slices.ContainsFunc(obs.listeners, func(l octavia.Listener) bool {
			return l.Protocol == s.listener.Protocol && l.Port == s.listener.Port
		})
	case createPool:
		return !slices.ContainsFunc(obs.listeners, func(l octavia.Listener) bool {
			return l.ID == s.id && l.DefaultPoolID == ""
		})
	}
	if pool < 0 || obs.pools[pool].ProvisioningStatus == octavia.StatusError {
		return true
	}
	have := obs.members[s.id]
	if slices.ContainsFunc(have, func(m octavia.Member) bool { return m.ProvisioningStatus == octavia.StatusError }) {
		return true // the provider failed a member: its last word on the pool
	}
	switch s.kind {
	case setAffinity:
		return obs.pools[pool].AffinityTimeout == s.listener.Pool.AffinityTimeout
	case deleteMember:
		return !slices.ContainsFunc(have, func(m octavia.Member) bool { return m.ID == s.memberID })
	case createMember:
		return slices.ContainsFunc(have, func(m octavia.Member) bool {
			return m.Address == s.member.Address && m.Port == s.member.Port
		})
	}
	return memberSteps(s.id, s.listener, have) == nil
}

// echo is the last write kuryr made to a Service's load balancer, until
// Octavia shows it.
type echo struct {
	step  step
	until time.Time
}

// sent records a write Octavia took.
func (p *progress) sent(uid string, s step, wait time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.get(uid).echo = &echo{step: s, until: p.clock().Add(wait)}
}

// awaiting returns the last write to a Service's load balancer while obs
// does not show it yet and its echoWait has not passed; "" once it does or
// has (the write is forgotten then).
func (p *progress) awaiting(uid string, obs observed) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	t := p.get(uid)
	if t.echo == nil {
		return ""
	}
	if shown(t.echo.step, obs) || !p.clock().Before(t.echo.until) {
		t.echo = nil
		return ""
	}
	return fmt.Sprintf("Octavia to show %q", t.echo.step)
}
