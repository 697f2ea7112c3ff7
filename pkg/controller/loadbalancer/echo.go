package loadbalancer

import (
	"fmt"
	"slices"
	"strings"
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
// write's effect, or the provider has been idle long enough (awaiting).
const (
	echoBase     = 3 * time.Second
	echoPerWrite = 2 * time.Second // the provider's time per request, under load
	echoMax      = 2 * time.Minute
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
	return min(echoBase+time.Duration(n)*echoPerWrite, echoMax/2)
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
	if slices.ContainsFunc(have, func(m octavia.Member) bool { return octavia.Pending(m.ProvisioningStatus) }) {
		return false // a member the provider has not reported yet
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
	lb     string
	step   step
	sentAt time.Time
	until  time.Time
	look   string // what the last look saw (progress moves until on)
}

// sent records a write Octavia took, or may have taken (no clear answer).
func (p *progress) sent(uid, lbID string, s step, wait time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.clock()
	p.get(uid).echo = &echo{lb: lbID, step: s, sentAt: now, until: now.Add(wait)}
}

// awaiting returns the last write to a Service's load balancer lbID while
// obs does not show it yet, with when to look again; "" once it shows it,
// or the provider has done nothing visible for echoWait while no load
// balancer settled for echoBase (the provider works through the requests
// of all load balancers one at a time: under a burst a pool's next
// request waits behind others'), or echoMax after the write. The write
// is forgotten then.
func (p *progress) awaiting(uid, lbID string, obs observed) (string, time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	t := p.get(uid)
	e := t.echo
	if e == nil {
		return "", 0
	}
	now := p.clock()
	if look := lookOf(obs); look != e.look {
		e.look = look
		if next := now.Add(echoBase + echoPerWrite); next.After(e.until) {
			e.until = next
		}
	}
	idle := p.settled.IsZero() || now.Sub(p.settled) >= echoBase
	if e.lb != lbID || shown(e.step, obs) || (!now.Before(e.until) && idle) || now.Sub(e.sentAt) >= echoMax {
		t.echo = nil
		return "", 0
	}
	if now.Sub(e.sentAt) < 2*time.Second {
		return fmt.Sprintf("Octavia to show %q", e.step), 250 * time.Millisecond
	}
	return fmt.Sprintf("Octavia to show %q", e.step), time.Second
}

// lookOf sums up what a look saw of a load balancer's children: a change is
// the provider's progress.
func lookOf(obs observed) string {
	var b strings.Builder
	for _, l := range obs.listeners {
		fmt.Fprintf(&b, "%s %s %s;", l.ID, l.ProvisioningStatus, l.DefaultPoolID)
	}
	for _, pl := range obs.pools {
		fmt.Fprintf(&b, "%s %s %d", pl.ID, pl.ProvisioningStatus, pl.AffinityTimeout)
		for _, m := range obs.members[pl.ID] {
			fmt.Fprintf(&b, " %s %s", m.ID, m.ProvisioningStatus)
		}
		b.WriteString(";")
	}
	return b.String()
}
