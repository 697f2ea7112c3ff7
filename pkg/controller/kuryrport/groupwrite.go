package kuryrport

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/kuryr-k8s/kuryr/pkg/neutron"
	"github.com/kuryr-k8s/kuryr/pkg/openstack"
)

// groupWrites are the ports whose last security group write went
// unanswered, by the revision it was made at. Neutron may still do such a
// write long after kuryr gave up on it (in a fault campaign, 21 s later,
// after a later write it then undid). Every write is therefore made at the
// revision the port was read at (If-Match), so that, done late, it is
// refused if anything changed the port meanwhile; and until the port has
// left the revision of its unanswered write, kuryr's copy of its groups (a
// KuryrPort's status, a pooled port) is not trusted: the port is read, and
// moved past that revision (written, or fenced) before it is trusted again.
type groupWrites struct {
	mu  sync.Mutex
	rev map[string]int
}

// mark records an unanswered write made at rev: the one that counts (the
// port had left the revisions of any earlier ones).
func (g *groupWrites) mark(id string, rev int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.rev == nil {
		g.rev = map[string]int{}
	}
	g.rev[id] = rev
}

// at is the revision of the port's unanswered write, if it has one.
func (g *groupWrites) at(id string) (int, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	rev, ok := g.rev[id]
	return rev, ok
}

// forget drops a port that left that revision, or is deleted.
func (g *groupWrites) forget(id string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	delete(g.rev, id)
}

// groupWriteTries bounds the writes of one setGroups: a refused one (412)
// found the port changed (by OVN's status, its binding, a late write)
// between reading and writing it, and is made again at the new revision.
const groupWriteTries = 3

// setGroups makes a port carry the groups want gives for those it carries
// (sorted, without repeats), and returns them. have is kuryr's copy of the
// port's groups (nil: not known): when it already has want's and no write
// of the port's is unanswered, nothing is read or written. Otherwise the
// port is read and written at the revision read if it differs, or fenced
// if it does not while a write made at that revision is unanswered; it
// returns once no write this process knows of can change the port.
// suspect says a write may be unanswered that this process does not know
// of (a KuryrPort whose status says its last write was not seen through,
// after a restart): the port is fenced at the revision first read.
func (r *Reconciler) setGroups(ctx context.Context, id string, have []string, suspect bool, want func(carried []string) []string) ([]string, error) {
	unanswered, marked := r.groupWrites.at(id)
	if !marked && !suspect && have != nil && slices.Equal(union(have, nil), want(union(have, nil))) {
		return have, nil
	}
	var err error
	for range groupWriteTries {
		carried, rev, rerr := r.GroupPorts.PortSecurityGroups(ctx, id)
		if neutron.IsNotFound(rerr) {
			r.groupWrites.forget(id)
		}
		if rerr != nil {
			return nil, rerr
		}
		if suspect && !marked {
			unanswered, marked, suspect = rev, true, false
		}
		carried = union(carried, nil)
		target := want(carried)
		if marked && rev != unanswered {
			// The unanswered write was done or can no longer be.
			r.groupWrites.forget(id)
			marked = false
		}
		switch {
		case !slices.Equal(carried, target):
			if err = r.GroupPorts.SetPortSecurityGroups(ctx, id, target, rev); err == nil {
				r.groupWrites.forget(id) // past the revision of any other write
				return target, nil
			}
		case marked:
			if err = r.GroupPorts.FencePort(ctx, id, rev); err == nil {
				r.groupWrites.forget(id)
				return carried, nil
			}
		default:
			return carried, nil
		}
		if neutron.PreconditionFailed(err) {
			continue // changed meanwhile (a late write done?): read again
		}
		if openstack.Unclear(err) {
			r.groupWrites.mark(id, rev)
		}
		return nil, err
	}
	return nil, fmt.Errorf("port %s changed under each of %d writes of its security groups: %w", id, groupWriteTries, err)
}
