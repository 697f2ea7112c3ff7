// Package records keeps a VM node's pod attachments in files, one per
// attachment, where a hypervisor node keeps them in OVS (an OVS port's
// external ids): a VM node has no OVS, and the daemon must still answer
// DEL, CHECK, GC and /attachments after a restart. Each file is written
// whole to a temporary name and renamed, so a crash leaves the old record
// or the new one, never half of one.
package records

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/kuryr-k8s/kuryr/pkg/atomicfile"
	"github.com/kuryr-k8s/kuryr/pkg/ovs"
)

// Dir holds the records of one node.
type Dir struct {
	Path string
	mu   sync.Mutex
}

const suffix = ".json"

// AddPort records an attachment, replacing one of the same host interface.
func (d *Dir) AddPort(_ context.Context, p ovs.Port) error {
	if err := checkName(p.Name); err != nil {
		return err
	}
	raw, err := json.Marshal(p)
	if err != nil {
		return err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := os.MkdirAll(d.Path, 0o700); err != nil {
		return fmt.Errorf("attachment records: %w", err)
	}
	// Written, synced, renamed and the directory synced: a VM reset at
	// any point leaves the old record or the new one, never an empty one.
	if err := atomicfile.Write(filepath.Join(d.Path, p.Name+suffix), raw, 0o600); err != nil {
		return fmt.Errorf("record attachment %s: %w", p.Name, err)
	}
	return nil
}

// DelPort forgets an attachment; one not recorded is no error.
func (d *Dir) DelPort(_ context.Context, name string) error {
	if err := checkName(name); err != nil {
		return err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	err := os.Remove(filepath.Join(d.Path, name+suffix))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("forget attachment %s: %w", name, err)
	}
	return nil
}

// Ports lists the recorded attachments (none before the first).
func (d *Dir) Ports(ctx context.Context) ([]ovs.Port, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	entries, err := os.ReadDir(d.Path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("attachment records: %w", err)
	}
	var out []ovs.Port
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), suffix) || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		raw, err := os.ReadFile(filepath.Join(d.Path, e.Name()))
		if err != nil {
			return nil, fmt.Errorf("attachment record %s: %w", e.Name(), err)
		}
		var p ovs.Port
		if err := json.Unmarshal(raw, &p); err != nil {
			// One unreadable record (a disk that lost it) must not stop
			// every DEL and the node's readiness: it is set aside, under
			// a name the listing skips, for whoever looks.
			aside := filepath.Join(d.Path, "."+strings.TrimSuffix(e.Name(), suffix)+".unreadable")
			if rerr := os.Rename(filepath.Join(d.Path, e.Name()), aside); rerr != nil {
				return nil, fmt.Errorf("attachment record %s: %w (setting it aside: %v)", e.Name(), err, rerr)
			}
			log.FromContext(ctx).Info("unreadable attachment record set aside", "record", aside, "error", err.Error())
			continue
		}
		out = append(out, p)
	}
	return out, nil
}

// WaitInstalled: nothing on a VM node says a port is installed (there is
// no ovn-controller); [cni_daemon] wait_for_usable must be neutron-active
// or none there.
func (d *Dir) WaitInstalled(context.Context, string, time.Duration) error {
	return errors.New("a VM node has no ovn-controller: set [cni_daemon] wait_for_usable = neutron-active")
}

// Interfaces lists the attachments as /attachments shows OVS interfaces:
// their external ids.
func (d *Dir) Interfaces(ctx context.Context) ([]ovs.Interface, error) {
	ports, err := d.Ports(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]ovs.Interface, 0, len(ports))
	for _, p := range ports {
		out = append(out, ovs.Interface{Name: p.Name, ExternalIDs: ovs.PodExternalIDs(p), LinkState: "up", AdminState: "up"})
	}
	return out, nil
}

// checkName refuses names that are not a single file name.
func checkName(name string) error {
	if name == "" || strings.ContainsAny(name, `/\`) || strings.HasPrefix(name, ".") {
		return fmt.Errorf("attachment name %q is not an interface name", name)
	}
	return nil
}
