package uninstall

import (
	"cmp"
	"context"
	"errors"
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

// sweep deletes kuryr's OpenStack objects: each pass lists everything of
// kuryr's directly (leftovers), runs the controller's sweep as if the
// cluster were empty (it knows the order: pairs, subports, router
// interfaces, networks), then deletes what its classes do not cover;
// until a listing finds nothing, or the timeout. A pass's failures are the
// next pass's work (a group still on a port, a load balancer still
// deleting); the last one is reported if time runs out.
func (r *run) sweep(ctx context.Context) (doctor.Finding, bool) {
	const c = "openstack"
	s := r.sweeper()
	ctx, cancel := context.WithTimeout(ctx, r.o.Timeout)
	defer cancel()
	start, passes := time.Now(), 0
	var first, left leftovers
	var last error
	for {
		l, err := r.list(ctx)
		switch {
		case err != nil:
			if err := ours(ctx, err); err != nil {
				last = fmt.Errorf("listing: %w", err)
			}
		case l.count() == 0:
			// The pairs kuryr added to VM ports go once their ports are
			// gone: one more sweep, then none may be left.
			left = l
			err := s.Sweep(ctx, logr.Discard())
			o, derr := s.DryRun(ctx, false)
			switch {
			case err == nil && derr == nil && o.PairCount() == 0:
				return doctor.Findingf(c, doctor.OK, "deleted everything of cluster %s in %s (passes: %d): %s",
					s.Cluster, time.Since(start).Round(time.Second), passes, first), true
			case err == nil && derr == nil:
				last = fmt.Errorf("%d address pairs left on VM ports", o.PairCount())
			default:
				if e := cmp.Or(ours(ctx, err), ours(ctx, derr)); e != nil {
					last = e
				}
			}
		default:
			if passes == 0 {
				first = l
			}
			left, passes = l, passes+1
			if err := errors.Join(ours(ctx, s.Sweep(ctx, logr.Discard())), ours(ctx, r.remove(ctx, l))); err != nil {
				last = err
			}
		}
		select {
		case <-ctx.Done():
			msg := fmt.Sprintf("after %s, left: %s", time.Since(start).Round(time.Second), left)
			if last != nil {
				msg += "; last error: " + last.Error()
			}
			return doctor.Findingf(c, doctor.Fail, "%s (kubectl kuryr uninstall --yes again continues)", msg), false
		case <-time.After(r.o.Interval):
		}
	}
}

// ours is err unless it only says that uninstall's own time ran out (the
// last real error says more). A request's own timeout is a real error.
func ours(ctx context.Context, err error) error {
	if err != nil && ctx.Err() != nil && errors.Is(err, ctx.Err()) {
		return nil
	}
	return err
}

// plan lists what uninstall would remove.
func (r *run) plan(ctx context.Context) ([]doctor.Finding, error) {
	objs, err := r.countObjects(ctx)
	if err != nil {
		return nil, err
	}
	if err := r.record(ctx); err != nil {
		return nil, err
	}
	l, err := r.list(ctx)
	if err != nil {
		return nil, fmt.Errorf("listing kuryr's OpenStack objects: %w", err)
	}
	return []doctor.Finding{
		doctor.Findingf("controller", doctor.Warn, "would scale kuryr-controller to 0"),
		doctor.Findingf("kuryr objects", doctor.Warn, "would delete %s (finalizers removed)", objs),
		doctor.Findingf("openstack", doctor.Warn, "would delete %d objects of cluster %s: %s (and the pairs kuryr added to VM ports)",
			l.count(), r.cloud.Config.Kubernetes.ClusterName, l),
		doctor.Findingf("uninstall", doctor.Warn, "nothing removed: run again with --yes (pods lose their network)"),
	}, nil
}

// sweeper is the controller's sweep with nothing alive in the cluster:
// everything tagged with it is an orphan. Peer groups and address groups
// are deleted directly (no policy can name them again: the controller is
// stopped).
func (r *run) sweeper() *cleanup.Sweeper {
	s, _ := doctor.Sweeper(r.e, r.cloud, emptyCluster{})
	s.Ledger, s.Uninstall = noLedger{}, true
	s.Peers = directPeers{r.cloud.Neutron}
	// Groups of policies may be left from when they were on.
	s.Policies, s.AddressGroups = r.cloud.Neutron, r.cloud.Neutron
	return s
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
