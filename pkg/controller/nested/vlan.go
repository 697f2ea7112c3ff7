package nested

import (
	"context"
	"fmt"

	"github.com/kuryr-k8s/kuryr/pkg/keyedlock"
	"github.com/kuryr-k8s/kuryr/pkg/neutron"
)

// trunkAPI attaches and detaches subports.
type trunkAPI interface {
	Subports(ctx context.Context, trunkID string) ([]neutron.Subport, error)
	AddSubports(ctx context.Context, trunkID string, subs []neutron.Subport) error
	RemoveSubports(ctx context.Context, trunkID string, portIDs []string) error
}

// VLAN ids a subport may have (802.1Q: 0 and 4095 are reserved).
const (
	minVLAN = 1
	maxVLAN = 4094
)

// vlanAttempts bounds the re-reads after Neutron refused an id another
// writer took meanwhile.
const vlanAttempts = 3

// Trunks attaches pods' ports to VMs' trunks.
type Trunks struct {
	Neutron trunkAPI
	locks   keyedlock.Locks
}

// Attach makes each port a subport of trunk and returns the VLAN id of
// each (by port id). Ports already on the trunk keep theirs: after a
// crash, or an attach whose answer was lost, the trunk is read before
// anything is attached again. The ids are free ones on the trunk as
// Neutron lists it; all ports go in one atomic call.
func (t *Trunks) Attach(ctx context.Context, trunk string, ports []string) (map[string]int, error) {
	defer t.locks.Lock(trunk)()
	var err error
	for range vlanAttempts {
		var have []neutron.Subport
		if have, err = t.Neutron.Subports(ctx, trunk); err != nil {
			return nil, err
		}
		ids, missing, perr := planVLANs(have, ports)
		if perr != nil {
			return nil, fmt.Errorf("trunk %s: %w", trunk, perr)
		}
		if len(missing) == 0 {
			return ids, nil
		}
		err = t.Neutron.AddSubports(ctx, trunk, missing)
		if err == nil {
			return ids, nil
		}
		if !neutron.VLANTaken(err) {
			return nil, err
		}
	}
	return nil, fmt.Errorf("trunk %s: VLAN ids taken by another writer %d times in a row: %w", trunk, vlanAttempts, err)
}

// Detach takes ports off trunk (ports not on it are no error).
func (t *Trunks) Detach(ctx context.Context, trunk string, ports []string) error {
	defer t.locks.Lock(trunk)()
	return t.Neutron.RemoveSubports(ctx, trunk, ports)
}

// planVLANs gives each port its id: the one it has on the trunk, or the
// next free one after the highest in use (missing: the subports to add).
// Pure.
func planVLANs(have []neutron.Subport, ports []string) (ids map[string]int, missing []neutron.Subport, err error) {
	ids = map[string]int{}
	used := map[int]bool{}
	for _, s := range have {
		used[s.SegmentationID] = true
		ids[s.PortID] = s.SegmentationID
	}
	// After the highest id in use, wrapping around: an id just freed is
	// not handed out again at once (its VLAN interface may still be in a
	// pod namespace the runtime has not torn down yet).
	next := minVLAN
	for id := range used {
		next = max(next, id+1)
	}
	for _, p := range ports {
		if _, ok := ids[p]; ok {
			continue
		}
		id, ok := freeFrom(used, next)
		if !ok {
			return nil, nil, fmt.Errorf("no free VLAN id left (%d subports)", len(have))
		}
		used[id], ids[p], next = true, id, id+1
		missing = append(missing, neutron.Subport{PortID: p, SegmentationType: "vlan", SegmentationID: id})
	}
	keep := map[string]int{}
	for _, p := range ports {
		keep[p] = ids[p]
	}
	return keep, missing, nil
}

// freeFrom is the first id from start on not in used, wrapping around.
func freeFrom(used map[int]bool, start int) (int, bool) {
	for i := range maxVLAN {
		if id := (start-minVLAN+i)%maxVLAN + minVLAN; !used[id] {
			return id, true
		}
	}
	return 0, false
}
