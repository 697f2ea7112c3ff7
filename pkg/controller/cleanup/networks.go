package cleanup

import (
	"context"
	"errors"
	"fmt"

	"github.com/go-logr/logr"

	"github.com/kuryr-k8s/kuryr/pkg/names"
	"github.com/kuryr-k8s/kuryr/pkg/neutron"
)

// sweepNetworks deletes orphaned networks (router interface first, then the
// network) that no port is left on. One with ports is kept: they are a live
// pod's (the sweep has just deleted the orphaned ones), or not kuryr's, and
// detaching it would cut them off; a later sweep takes it once they go.
func (s *Sweeper) sweepNetworks(ctx context.Context, logger logr.Logger, orphans []neutron.Network) error {
	var errs []error
	for _, n := range orphans {
		left, err := s.portsLeft(ctx, n, nil)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		keys := []any{"network", n.ID, "namespace", names.NamespaceOf(n.Tags), "node", names.NodeNetworkOf(n.Tags)}
		if left > 0 {
			logger.Info("orphaned network kept while ports remain on it", append(keys, "ports", left)...)
			continue
		}
		logger.Info("deleting orphaned network", keys...)
		if err := s.deleteNetwork(ctx, n); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func (s *Sweeper) deleteNetwork(ctx context.Context, n neutron.Network) error {
	for _, sub := range n.Subnets {
		if err := s.Neutron.RemoveRouterInterface(ctx, s.Router, sub); err != nil {
			return fmt.Errorf("network %s: %w", n.ID, err)
		}
	}
	return s.Neutron.DeleteNetwork(ctx, n.ID)
}

// portsLeft counts the ports on n but Neutron's own and those in gone
// (which the sweep deletes first).
func (s *Sweeper) portsLeft(ctx context.Context, n neutron.Network, gone map[string]bool) (int, error) {
	users, err := s.Neutron.NetworkUsers(ctx, n.ID)
	if err != nil {
		return 0, err
	}
	left := 0
	for _, p := range users {
		if !gone[p.ID] {
			left++
		}
	}
	return left, nil
}

// unused are the networks among nets that no port is left on once the
// ports in doomed are deleted, as Sweep would find them. Reads only.
func (s *Sweeper) unused(ctx context.Context, nets []neutron.Network, doomed []neutron.Port) ([]neutron.Network, error) {
	gone := map[string]bool{}
	for _, p := range doomed {
		gone[p.ID] = true
	}
	var out []neutron.Network
	for _, n := range nets {
		left, err := s.portsLeft(ctx, n, gone)
		if err != nil {
			return nil, err
		}
		if left == 0 {
			out = append(out, n)
		}
	}
	return out, nil
}
