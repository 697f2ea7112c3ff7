package cleanup

import (
	"context"
	"errors"
	"strings"

	"github.com/go-logr/logr"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"

	"github.com/kuryr-k8s/kuryr/pkg/controller/nested"
	"github.com/kuryr-k8s/kuryr/pkg/neutron"
)

// vmPairs is the seam for nested-macvlan pods' allowed address pairs on
// their VMs' ports (a nested.Placer).
type vmPairs interface {
	MacvlanParents(ctx context.Context) ([]neutron.ParentPort, error)
	RemovePairs(ctx context.Context, parent string, pairs []ports.AddressPair) error
}

// OrphanPairs are, per VM port, kuryr's pairs (a MAC in kuryr's macvlan
// range, nested.IsMacvlanMAC) that nothing owns: no port of the cluster,
// listed after the VM ports were read, has that MAC, and no KuryrPort,
// read after too, names a port with it or records it as its VIF's MAC (a
// port whose tagging failed is not listed by tag, but its KuryrPort names
// it). A pair is added after its port is created and removed before its
// port is deleted, so a pair read before the listings that none of them
// owns is an orphan (its KuryrPort force-removed, or its finalizer's
// removal lost). Pairs of other MACs (the VM's own, users' VIPs) are never
// touched. Pure.
func OrphanPairs(parents []neutron.ParentPort, clusterPorts []neutron.Port, o Owners) map[string][]ports.AddressPair {
	owned := map[string]bool{}
	for _, p := range clusterPorts {
		owned[nested.MacvlanMAC(p.ID)] = true
	}
	for id := range o.PortIDs {
		owned[nested.MacvlanMAC(id)] = true
	}
	out := map[string][]ports.AddressPair{}
	for _, parent := range parents {
		for _, pair := range parent.AllowedAddressPairs {
			mac := strings.ToLower(pair.MACAddress)
			if nested.IsMacvlanMAC(mac) && !owned[mac] && !o.VIFMACs[mac] {
				out[parent.ID] = append(out[parent.ID], pair)
			}
		}
	}
	return out
}

// sweepPairs takes orphaned pairs off VM ports; one failure does not stop
// the others.
func (s *Sweeper) sweepPairs(ctx context.Context, logger logr.Logger, orphans map[string][]ports.AddressPair) error {
	var errs []error
	for parent, pairs := range orphans {
		logger.Info("taking orphaned address pairs off a VM port", "port", parent, "pairs", len(pairs))
		if err := s.VMPairs.RemovePairs(ctx, parent, pairs); err != nil && !neutron.IsNotFound(err) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
