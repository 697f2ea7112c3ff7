package loadbalancer

import (
	"fmt"
	"slices"

	kuryrv1 "github.com/kuryr-k8s/kuryr/api/v1"
	"github.com/kuryr-k8s/kuryr/pkg/octavia"
)

// Names follow the original's, so that operators recognise them:
// "<namespace>/<service>" and "<namespace>/<service>:<PROTOCOL>:<port>".
func lbName(ns, name string) string { return ns + "/" + name }

func listenerName(ns, name, proto string, port int32) string {
	return fmt.Sprintf("%s/%s:%s:%d", ns, name, proto, port)
}

// desiredListeners are the listeners, pools and members a spec asks for;
// affinity is the SOURCE_IP persistence timeout of the pools that can take
// one (affinityProtocol; 0: none).
func desiredListeners(klb *kuryrv1.KuryrLoadBalancer, tags []string, affinity int32) []octavia.ListenerSpec {
	out := make([]octavia.ListenerSpec, 0, len(klb.Spec.Ports))
	for _, p := range klb.Spec.Ports {
		name := listenerName(klb.Namespace, klb.Name, p.Protocol, p.Port)
		pool := octavia.PoolSpec{Name: name, Protocol: p.Protocol, Algorithm: klb.Spec.Algorithm, Tags: tags}
		if affinityProtocol(p.Protocol) {
			pool.AffinityTimeout = affinity
		}
		for _, m := range p.Members {
			pool.Members = append(pool.Members, octavia.MemberSpec{Name: memberName(m), Address: m.IP, Port: m.Port, SubnetID: m.SubnetID})
		}
		out = append(out, octavia.ListenerSpec{Name: name, Protocol: p.Protocol, Port: p.Port, Tags: tags, Pool: pool})
	}
	return out
}

func memberName(m kuryrv1.LoadBalancerMember) string {
	if m.TargetRef != "" {
		return fmt.Sprintf("%s:%d", m.TargetRef, m.Port)
	}
	return fmt.Sprintf("%s:%d", m.IP, m.Port)
}

// observed is what Octavia holds under one load balancer.
type observed struct {
	listeners []octavia.Listener
	pools     []octavia.Pool
	members   map[string][]octavia.Member // by pool id
}

type stepKind int

const (
	deletePool stepKind = iota
	deleteListener
	createListener
	createPool
	setAffinity
	setMembers
	deleteMember
	createMember
)

// smallChange: a pool whose members differ by at most this many is changed
// member by member, above it in one batch. The ovn provider looks up the
// subnet of every member a batch names, one after the other in Neutron (10
// members: 4-5 s); a single member is added or removed in 0.4-0.5 s.
const smallChange = 2

// step is one Octavia write. Each makes the load balancer PENDING_UPDATE,
// so a reconcile applies one and requeues until it is ACTIVE again.
type step struct {
	kind     stepKind
	id       string // pool or listener acted on
	listener octavia.ListenerSpec
	member   octavia.MemberSpec // createMember
	memberID string             // deleteMember
	why      string
}

func (s step) String() string {
	switch s.kind {
	case deletePool:
		return "delete pool " + s.id + " (" + s.why + ")"
	case deleteListener:
		return "delete listener " + s.id + " (" + s.why + ")"
	case createListener:
		return "create listener " + s.listener.Name
	case createPool:
		return "create pool " + s.listener.Pool.Name
	case setAffinity:
		return fmt.Sprintf("set SOURCE_IP session persistence (%d s) on pool %s", s.listener.Pool.AffinityTimeout, s.id)
	case deleteMember:
		return "remove member " + s.memberID + " from pool " + s.id
	case createMember:
		return fmt.Sprintf("add member %s:%d to pool %s", s.member.Address, s.member.Port, s.id)
	}
	return fmt.Sprintf("set the %d members of pool %s", len(s.listener.Pool.Members), s.id)
}

// changesMembers: the step writes a pool's members.
func (s step) changesMembers() bool {
	return s.kind == deleteMember || s.kind == createMember || s.kind == setMembers
}

func key(proto string, port int32) string { return fmt.Sprintf("%s/%d", proto, port) }

// plan lists the writes that make obs match want: removals first (they free
// ports and protocols), then creations, then member updates. Objects in
// ERROR are removed and created again.
func plan(want []octavia.ListenerSpec, obs observed) []step {
	wanted := map[string]octavia.ListenerSpec{}
	for _, w := range want {
		wanted[key(w.Protocol, w.Port)] = w
	}
	pools := map[string]octavia.Pool{}
	for _, p := range obs.pools {
		pools[p.ID] = p
	}
	var removals, creations, updates []step
	gonePools := map[string]bool{}
	dropPool := func(id, why string) {
		if _, ok := pools[id]; ok && !gonePools[id] {
			gonePools[id] = true
			removals = append(removals, step{kind: deletePool, id: id, why: why})
		}
	}
	kept := map[string]octavia.Listener{}
	for _, l := range obs.listeners {
		k := key(l.Protocol, l.Port)
		_, ok := wanted[k]
		_, dup := kept[k]
		why := ""
		switch {
		case !ok:
			why = "no longer a Service port"
		case dup:
			why = "duplicate"
		case l.ProvisioningStatus == octavia.StatusError:
			why = "in ERROR"
		}
		if why != "" {
			dropPool(l.DefaultPoolID, "its listener goes: "+why)
			removals = append(removals, step{kind: deleteListener, id: l.ID, why: why})
			continue
		}
		kept[k] = l
	}
	for _, p := range obs.pools {
		switch {
		case len(p.ListenerIDs) == 0:
			dropPool(p.ID, "no listener")
		case p.ProvisioningStatus == octavia.StatusError:
			dropPool(p.ID, "in ERROR")
		}
	}
	for _, w := range want {
		l, ok := kept[key(w.Protocol, w.Port)]
		if !ok {
			creations = append(creations, step{kind: createListener, listener: w})
			continue
		}
		p, ok := pools[l.DefaultPoolID]
		switch {
		case !ok || gonePools[p.ID]:
			creations = append(creations, step{kind: createPool, id: l.ID, listener: w})
		case p.Algorithm != w.Pool.Algorithm:
			dropPool(p.ID, "algorithm "+p.Algorithm+" is not "+w.Pool.Algorithm)
			creations = append(creations, step{kind: createPool, id: l.ID, listener: w})
		case p.AffinityTimeout > 0 && w.Pool.AffinityTimeout == 0:
			// The ovn provider clears a pool's OVN affinity when the pool
			// goes, not when its persistence is unset.
			dropPool(p.ID, "session persistence is no longer wanted")
			creations = append(creations, step{kind: createPool, id: l.ID, listener: w})
		default:
			if p.AffinityTimeout != w.Pool.AffinityTimeout {
				updates = append(updates, step{kind: setAffinity, id: p.ID, listener: w})
			}
			updates = append(updates, memberSteps(p.ID, w, obs.members[p.ID])...)
		}
	}
	return slices.Concat(removals, creations, updates)
}

// memberSteps make a pool's members want: nothing when they match (by
// address and port, and by subnet where kuryr names one), one step per
// member for a small change, else one batch; a batch too when members
// come and go and the pool ends up smaller than the change (a backend
// replaced in a pool of one: one write, so one lock of the load balancer,
// instead of two). A member in ERROR is replaced member by member (a batch
// would keep it).
func memberSteps(poolID string, w octavia.ListenerSpec, have []octavia.Member) []step {
	idx := map[string]octavia.Member{}
	for _, m := range have {
		idx[fmt.Sprintf("%s/%d", m.Address, m.Port)] = m
	}
	var adds []octavia.MemberSpec
	var removes []string
	wanted, replaced := map[string]bool{}, false
	for _, m := range w.Pool.Members {
		k := fmt.Sprintf("%s/%d", m.Address, m.Port)
		wanted[k] = true
		cur, ok := idx[k]
		switch {
		case !ok:
			adds = append(adds, m)
		case cur.ProvisioningStatus == octavia.StatusError || (m.SubnetID != "" && cur.SubnetID != m.SubnetID):
			removes, adds, replaced = append(removes, cur.ID), append(adds, m), true
		}
	}
	for k, m := range idx {
		if !wanted[k] {
			removes = append(removes, m.ID)
		}
	}
	switch n := len(adds) + len(removes); {
	case n == 0:
		return nil
	case n > smallChange, !replaced && len(adds) > 0 && len(removes) > 0 && len(w.Pool.Members) < n:
		return []step{{kind: setMembers, id: poolID, listener: w}}
	}
	var out []step
	for _, id := range removes {
		out = append(out, step{kind: deleteMember, id: poolID, memberID: id})
	}
	for _, m := range adds {
		out = append(out, step{kind: createMember, id: poolID, member: m})
	}
	return out
}
