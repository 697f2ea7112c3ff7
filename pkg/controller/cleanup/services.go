package cleanup

import (
	"context"
	"errors"

	"github.com/go-logr/logr"

	"github.com/kuryr-k8s/kuryr/pkg/neutron"
	"github.com/kuryr-k8s/kuryr/pkg/octavia"
)

// serviceResources are the cluster's load balancers and floating IPs, as
// listed before Kubernetes is read.
type serviceResources struct {
	lbs  []octavia.LoadBalancer
	fips []neutron.FloatingIP
}

func (s *Sweeper) listServiceResources(ctx context.Context, tag []string) (serviceResources, error) {
	var r serviceResources
	if s.Octavia == nil {
		return r, nil
	}
	var err error
	if r.lbs, err = s.Octavia.FindLoadBalancers(ctx, tag); err != nil {
		return r, err
	}
	r.fips, err = s.FloatingIPs.ListFloatingIPs(ctx, neutron.FloatingIPFilter{Tags: tag})
	return r, err
}

// sweepServices deletes the load balancers (with everything in them) and
// floating IPs of Services that have no KuryrLoadBalancer.
func (s *Sweeper) sweepServices(ctx context.Context, logger logr.Logger, r serviceResources, owned Owners) error {
	if s.Octavia == nil {
		return nil
	}
	var errs []error
	for _, lb := range OrphanLoadBalancers(r.lbs, owned) {
		logger.Info("deleting orphaned load balancer", "loadBalancer", lb.ID, "name", lb.Name,
			"serviceUid", neutron.ServiceUIDOf(lb.Tags))
		if err := s.Octavia.DeleteLoadBalancer(ctx, lb.ID); err != nil {
			errs = append(errs, err)
		}
	}
	for _, f := range OrphanFloatingIPs(r.fips, owned) {
		logger.Info("releasing orphaned floating IP", "floatingIp", f.ID, "address", f.Address,
			"serviceUid", neutron.ServiceUIDOf(f.Tags))
		if err := s.FloatingIPs.DeleteFloatingIP(ctx, f.ID); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
