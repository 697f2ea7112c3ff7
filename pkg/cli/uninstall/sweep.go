package uninstall

import (
	"context"
	"fmt"
	"time"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kuryr-k8s/kuryr/pkg/cli/doctor"
	"github.com/kuryr-k8s/kuryr/pkg/controller/cleanup"
	"github.com/kuryr-k8s/kuryr/pkg/neutron"
)

// sweep runs the controller's sweep against an empty cluster until it
// finds nothing tagged with the cluster, or the timeout.
func (r *run) sweep(ctx context.Context) (doctor.Finding, bool) {
	const c = "openstack"
	s, pools := r.sweeper()
	ctx, cancel := context.WithTimeout(ctx, r.o.Timeout)
	defer cancel()
	start, passes := time.Now(), 0
	var first cleanup.Orphans
	for {
		left, err := s.DryRun(ctx, pools)
		if err != nil {
			return doctor.Findingf(c, doctor.Fail, "listing kuryr's objects: %v", err), false
		}
		if passes == 0 {
			first = left
		}
		if left.Count() == 0 {
			return doctor.Findingf(c, doctor.OK, "deleted every object tagged for cluster %s in %s (sweep passes: %d): %s",
				s.Cluster, time.Since(start).Round(time.Second), passes, doctor.DescribeOrphans(first)), true
		}
		passes++
		// A pass's failures are the next pass's work (an object still in
		// use, a load balancer still deleting); the last listing says what
		// is left.
		_ = s.Sweep(ctx, logr.Discard())
		select {
		case <-ctx.Done():
			left, _ := s.DryRun(context.WithoutCancel(ctx), pools)
			return doctor.Findingf(c, doctor.Fail, "after %s, %d objects left: %s (kubectl kuryr uninstall --yes again continues)",
				time.Since(start).Round(time.Second), left.Count(), doctor.DescribeOrphans(left)), false
		case <-time.After(r.o.Interval):
		}
	}
}

// plan lists what uninstall would remove.
func (r *run) plan(ctx context.Context) ([]doctor.Finding, error) {
	objs, err := r.countObjects(ctx)
	if err != nil {
		return nil, err
	}
	s, pools := r.sweeper()
	o, err := s.DryRun(ctx, pools)
	if err != nil {
		return nil, fmt.Errorf("listing kuryr's OpenStack objects: %w", err)
	}
	return []doctor.Finding{
		doctor.Findingf("controller", doctor.Warn, "would scale kuryr-controller to 0"),
		doctor.Findingf("kuryr objects", doctor.Warn, "would delete %s (finalizers removed)", objs),
		doctor.Findingf("openstack", doctor.Warn, "would delete %d objects tagged for cluster %s: %s",
			o.Count(), s.Cluster, doctor.DescribeOrphans(o)),
		doctor.Findingf("uninstall", doctor.Warn, "nothing removed: run again with --yes (pods lose their network)"),
	}, nil
}

// sweeper is the controller's sweep with nothing alive in the cluster:
// everything tagged with it is an orphan. Peer groups and address groups
// are deleted directly (no policy can name them again: the controller is
// stopped).
func (r *run) sweeper() (*cleanup.Sweeper, bool) {
	s, pools := doctor.Sweeper(r.e, r.cloud, emptyCluster{})
	s.Ledger, s.Uninstall = noLedger{}, true
	s.Peers = directPeers{r.cloud.Neutron}
	return s, pools
}

// emptyCluster is a cluster without any object: reads find nothing.
type emptyCluster struct{}

func (emptyCluster) Get(_ context.Context, key client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	return apierrors.NewNotFound(schema.GroupResource{Resource: fmt.Sprintf("%T", obj)}, key.Name)
}

func (emptyCluster) List(context.Context, client.ObjectList, ...client.ListOption) error { return nil }

// noLedger: no port ledger to tell (the controller's is gone with it).
type noLedger struct{}

func (noLedger) ForgetPort(string, string) {}

// directPeers deletes peers' groups outright.
type directPeers struct{ n *neutron.Client }

func (p directPeers) SweepPeer(ctx context.Context, _, id string) error {
	if err := p.n.DeleteSecurityGroup(ctx, id); err != nil && !neutron.InUse(err) {
		return err
	}
	return nil
}

func (p directPeers) SweepAddressPeer(ctx context.Context, _, id string) error {
	if err := p.n.DeleteAddressGroup(ctx, id); err != nil && !neutron.InUse(err) {
		return err
	}
	return nil
}
