package daemon

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/kuryr-k8s/kuryr/pkg/ovs"
)

// Readiness says whether this node can serve ADDs: the KuryrPort watch has
// synced and OVS answers. Installed is set once the CNI configuration is
// in place (what /readyz also requires).
type Readiness struct {
	OVS interface {
		Ports(ctx context.Context) ([]ovs.Port, error)
	}
	Synced    atomic.Bool
	Installed atomic.Bool
}

// CanServe is STATUS's answer: it answers at once (before the first sync it
// says so rather than waiting for it).
func (r *Readiness) CanServe() error {
	if !r.Synced.Load() {
		return errors.New("KuryrPort watch not synced yet")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := r.OVS.Ports(ctx); err != nil {
		return fmt.Errorf("OVS: %w", err)
	}
	return nil
}

// Ready is /readyz: able to serve, and the CNI configuration installed.
func (r *Readiness) Ready() error {
	if err := r.CanServe(); err != nil {
		return err
	}
	if !r.Installed.Load() {
		return errors.New("CNI configuration not installed yet")
	}
	return nil
}
