package cleanup

import (
	"context"
	"errors"

	"github.com/go-logr/logr"

	"github.com/kuryr-k8s/kuryr/pkg/controller/portgroups"
	"github.com/kuryr-k8s/kuryr/pkg/names"
	"github.com/kuryr-k8s/kuryr/pkg/neutron"
	"github.com/kuryr-k8s/kuryr/pkg/octavia"
)

// serviceResources are the cluster's load balancers, floating IPs and
// source groups, as
// listed before Kubernetes is read.
type serviceResources struct {
	lbs    []octavia.LoadBalancer
	fips   []neutron.FloatingIP
	groups []neutron.SecurityGroup
	failed error // listing failed: nothing of Services' is swept this time
}

func (s *Sweeper) listServiceResources(ctx context.Context, tag []string) (serviceResources, error) {
	var r serviceResources
	if s.Octavia == nil {
		return r, nil
	}
	var err error
	if r.lbs, err = s.Octavia.FindLoadBalancers(ctx, tag); err != nil {
		r.failed = err
		return r, nil // the ports and networks are still swept
	}
	if r.fips, err = s.FloatingIPs.ListFloatingIPs(ctx, neutron.FloatingIPFilter{Tags: tag}); err != nil {
		r.failed = err
	}
	if s.Groups != nil && r.failed == nil {
		if r.groups, err = s.Groups.FindSecurityGroups(ctx, tag); err != nil {
			r.failed = err
		}
	}
	return r, nil
}

// sweepServices deletes the load balancers (with everything in them),
// floating IPs and source groups of Services that have no
// KuryrLoadBalancer.
func (s *Sweeper) sweepServices(ctx context.Context, logger logr.Logger, r serviceResources, owned Owners) error {
	if s.Octavia == nil || r.failed != nil {
		return r.failed
	}
	var errs []error
	for _, lb := range OrphanLoadBalancers(r.lbs, owned) {
		if lb.ProvisioningStatus == "PENDING_DELETE" {
			continue
		}
		logger.Info("deleting orphaned load balancer", "loadBalancer", lb.ID, "name", lb.Name,
			"serviceUid", names.ServiceUIDOf(lb.Tags))
		if err := s.Octavia.DeleteLoadBalancer(ctx, lb.ID); err != nil {
			errs = append(errs, err)
		}
	}
	for _, f := range OrphanFloatingIPs(r.fips, owned) {
		logger.Info("releasing orphaned floating IP", "floatingIp", f.ID, "address", f.Address,
			"serviceUid", names.ServiceUIDOf(f.Tags))
		if err := s.FloatingIPs.DeleteFloatingIP(ctx, f.ID); err != nil {
			errs = append(errs, err)
		}
	}
	for _, g := range OrphanGroups(r.groups, owned) {
		logger.Info("deleting orphaned source group", "securityGroup", g.ID, "serviceUid", names.ServiceUIDOf(g.Tags))
		// Still named by a KuryrPort (portgroups.GroupOnPorts) or on a
		// pod's port (409): the KuryrPort reconciler takes it off; the next
		// sweep deletes it.
		if busy, err := portgroups.GroupOnPorts(ctx, s.Client, g.ID); err != nil || busy {
			if err != nil {
				errs = append(errs, err)
			}
			continue
		}
		if err := s.Groups.DeleteSecurityGroup(ctx, g.ID); err != nil && !neutron.InUse(err) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
