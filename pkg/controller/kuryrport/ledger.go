package kuryrport

import (
	"sync"

	"github.com/kuryr-k8s/kuryr/pkg/names"
	"github.com/kuryr-k8s/kuryr/pkg/neutron"
	"github.com/kuryr-k8s/kuryr/pkg/openstack"
)

// Ledger knows every pod port of this cluster in Neutron, by pod UID. It is
// loaded once from Neutron at start (one list call) and kept current by the
// reconciler, so that creating a port never needs a read first, yet a port
// created before a crash, whose KuryrPort status was never written, is
// adopted instead of created twice. It also remembers the pods whose last
// create went unanswered (Unanswered): their port is looked up by tag
// before another is created.
type Ledger struct {
	mu    sync.Mutex
	byPod map[string]neutron.Port
	// doomed are ports given up (their binding failed): they are deleted,
	// never handed to their pod, even when Neutron finishes binding one
	// while its delete goes unanswered.
	doomed map[string]bool
	// listed are the pods whose port the ledger knows only from a listing
	// (at start, or by tag after an unanswered create; by UID): Neutron
	// may still have been creating it (see neutron.CreateFinished), unlike
	// a port kuryr saw created.
	listed map[string]bool
	// Unanswered are the pods (by UID) whose last create went unanswered.
	Unanswered openstack.Unanswered
}

// NewLedger returns an empty ledger.
func NewLedger() *Ledger {
	return &Ledger{byPod: map[string]neutron.Port{}, doomed: map[string]bool{}, listed: map[string]bool{}}
}

// load records the pod ports among ports (the cluster's, listed at start).
func (l *Ledger) load(ports []neutron.Port) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, p := range ports {
		if uid := names.PodUIDOf(p.Tags); uid != "" {
			l.byPod[uid], l.listed[uid] = p, true
		}
	}
}

// Lookup returns the port of a pod, if one exists.
func (l *Ledger) Lookup(podUID string) (neutron.Port, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	p, ok := l.byPod[podUID]
	return p, ok
}

// Record remembers a port just created or found for a pod, one Neutron is
// done creating.
func (l *Ledger) Record(podUID string, p neutron.Port) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.byPod[podUID] = p
	delete(l.listed, podUID)
	l.Unanswered.Clear(podUID)
}

// Found remembers a port found for a pod by a listing (its tags, after an
// unanswered create): like one listed at start, Neutron may still be
// creating it (Listed), until a Record.
func (l *Ledger) Found(podUID string, p neutron.Port) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.byPod[podUID], l.listed[podUID] = p, true
	l.Unanswered.Clear(podUID)
}

// Refresh replaces the copy of a pod's port with a fresher one, keeping
// whether the ledger knows it only from a listing (Listed).
func (l *Ledger) Refresh(podUID string, p neutron.Port) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.byPod[podUID] = p
	l.Unanswered.Clear(podUID)
}

// Listed reports whether the ledger knows the pod's port only from a
// listing (at start, or Found): Neutron may have been still creating it.
func (l *Ledger) Listed(podUID string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.listed[podUID]
}

// Forget drops a pod's port once it is deleted.
func (l *Ledger) Forget(podUID string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.doomed, l.byPod[podUID].ID)
	delete(l.byPod, podUID)
	delete(l.listed, podUID)
	l.Unanswered.Clear(podUID)
}

// ForgetPort drops a pod's port only if it is the one known, so that
// deleting a duplicate never forgets the port in use.
func (l *Ledger) ForgetPort(podUID, portID string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if p, ok := l.byPod[podUID]; ok && p.ID == portID {
		delete(l.byPod, podUID)
		delete(l.listed, podUID)
	}
	delete(l.doomed, portID)
}

// Doom marks a port as given up: to be deleted, never used.
func (l *Ledger) Doom(portID string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.doomed[portID] = true
}

// Doomed says whether a port was given up.
func (l *Ledger) Doomed(portID string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.doomed[portID]
}

// Len is the number of known ports.
func (l *Ledger) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.byPod)
}
