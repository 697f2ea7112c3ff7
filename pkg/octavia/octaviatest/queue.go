package octaviatest

// The ovn provider's request queue (MemberByMember). Octavia hands
// ovn-octavia-provider 8.0.0 (OpenStack 2025.1) a pool delete as one
// request per member, then the pool, and a batch member update as one
// request per member. The provider works through them one at a time and,
// after each member's, reports the load balancer and all its listeners,
// pools and members ACTIVE (member_delete reports the current statuses of
// the whole OVN load balancer). Between two of them Octavia shows a pool
// being deleted ACTIVE with fewer members, or a batch half done, and takes
// writes again. The fake works through one queued request at the load
// balancer's activation and one more at each later GET of the load
// balancer while it is ACTIVE.

// enqueue adds provider requests to a load balancer's queue.
func (f *Fake) enqueue(lbID string, ops ...func()) {
	f.queue[lbID] = append(f.queue[lbID], ops...)
}

// work runs the next queued provider request of a load balancer, if any.
func (f *Fake) work(lbID string) {
	q := f.queue[lbID]
	if len(q) == 0 {
		return
	}
	op := q[0]
	if f.queue[lbID] = q[1:]; len(q) == 1 {
		delete(f.queue, lbID)
	}
	op()
}

// queuePoolDelete is a pool DELETE under MemberByMember: the pool shows
// PENDING_DELETE until the first member's report, then ACTIVE, losing a
// member at each request, and goes with the last.
func (f *Fake) queuePoolDelete(p Object) {
	p["provisioning_status"] = "PENDING_DELETE"
	lbID, id := str(p, "_lb"), str(p, "id")
	for _, m := range f.children(Members, "_pool", id) {
		f.enqueue(lbID, func() { delete(f.objects[Members], str(m, "id")) })
	}
	f.enqueue(lbID, func() {
		p := f.objects[Pools][id]
		if p == nil {
			return
		}
		ls := f.children(Listeners, "default_pool_id", id)
		f.removePool(p)
		for _, l := range ls { // the provider's report: ACTIVE
			l["provisioning_status"] = "ACTIVE"
		}
	})
}

// queueMemberDelete is a member a batch update removes under
// MemberByMember: it stays listed until its request comes.
func (f *Fake) queueMemberDelete(m Object) {
	pool := f.objects[Pools][str(m, "_pool")]
	f.enqueue(str(pool, "_lb"), func() {
		if f.objects[Members][str(m, "id")] != nil {
			f.removeMember(m)
		}
	})
}
