package migrate

import (
	"context"
	"errors"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/kuryr-k8s/kuryr/pkg/names"
	"github.com/kuryr-k8s/kuryr/pkg/neutron"
	"github.com/kuryr-k8s/kuryr/pkg/octavia"
)

// ports is the Neutron seam of the adopter.
type ports interface {
	AddTags(ctx context.Context, kind, id string, tags []string) (bool, error)
	Rename(ctx context.Context, kind, id, name string) error
	GetNetwork(ctx context.Context, id string) (*neutron.Network, error)
}

// balancers is the Octavia seam of the adopter.
type balancers interface {
	AddTags(ctx context.Context, kind, id string, tags []string) (bool, error)
	GetLoadBalancer(ctx context.Context, id string) (*octavia.LoadBalancer, error)
}

// adopter tags what the original made as kuryr tags what it makes itself,
// so that the controller finds and keeps it: a pod's port by its pod's UID
// (the controller's ledger), a namespace's network and subnet by their
// names (renamed to kuryr's) and tags, a Service's load balancer by its
// Service's UID (the VIP, the ClusterIP, stays), the floating IP the
// original allocated for it likewise. Tagging is idempotent: a second run
// writes nothing.
type adopter struct {
	neutron  ports
	octavia  balancers // nil: kuryr serves no Services
	cluster  string
	extra    []string      // kuryr's [neutron_defaults] resource_tags
	settle   time.Duration // how long a load balancer may stay PENDING_*
	interval time.Duration
}

func (a *adopter) tags(t string) []string {
	return append([]string{names.ClusterTag(a.cluster), t}, a.extra...)
}

// port tags a pod's port, and marks it adopted (names.AdoptedTag, taken
// off by finish); a port gone is reported (false).
func (a *adopter) port(ctx context.Context, p PortRecord) (bool, error) {
	_, err := a.neutron.AddTags(ctx, neutron.KindPort, p.PortID, append(a.tags(names.PodTag(p.UID)), names.AdoptedTag))
	if neutron.IsNotFound(err) {
		return false, nil
	}
	return err == nil, err
}

// network renames and tags a namespace's network and subnet.
func (a *adopter) network(ctx context.Context, n NetworkRecord) (bool, error) {
	net, err := a.neutron.GetNetwork(ctx, n.NetworkID)
	if neutron.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	name, tags := names.NetworkName(a.cluster, n.Namespace), a.tags(names.NamespaceTag(n.Namespace))
	if net.Name != name {
		if err := a.neutron.Rename(ctx, neutron.KindNetwork, n.NetworkID, name); err != nil {
			return false, err
		}
	}
	if _, err := a.neutron.AddTags(ctx, neutron.KindNetwork, n.NetworkID, tags); err != nil {
		return false, err
	}
	if err := a.neutron.Rename(ctx, neutron.KindSubnet, n.SubnetID, name); err != nil {
		return false, err
	}
	_, err = a.neutron.AddTags(ctx, neutron.KindSubnet, n.SubnetID, tags)
	return err == nil, err
}

// service tags a Service's load balancer, once it is ACTIVE (or in
// ERROR: the controller replaces that one), and the floating IP the
// original allocated for it. Its listeners and pools are not tagged: the
// controller knows them by protocol and port, the sweep by their load
// balancer, and ovn-octavia-provider (8.0) never answers an update that
// changes only their tags (they stay PENDING_UPDATE, and the controller
// replaces a load balancer stuck so). A load balancer gone is reported
// (false).
func (a *adopter) service(ctx context.Context, s ServiceRecord) (bool, error) {
	if a.octavia == nil {
		return false, errors.New("kuryr's configuration serves no Services ([neutron_defaults] service_subnet)")
	}
	tags := a.tags(names.ServiceTag(s.UID))
	if there, err := a.active(ctx, s.LoadBalancerID); err != nil || !there {
		return false, err
	}
	if _, err := a.octavia.AddTags(ctx, octavia.KindLoadBalancer, s.LoadBalancerID, tags); err != nil {
		if octavia.NotFound(err) {
			return false, nil
		}
		return false, err
	}
	if s.FloatingIPID != "" && s.FloatingIPAllocated {
		if _, err := a.neutron.AddTags(ctx, neutron.KindFloatingIP, s.FloatingIPID, tags); err != nil && !neutron.IsNotFound(err) {
			return false, err
		}
	}
	return a.active(ctx, s.LoadBalancerID)
}

// active waits until the load balancer accepts writes; false: it is gone.
func (a *adopter) active(ctx context.Context, id string) (bool, error) {
	var last string
	gone := false
	err := wait.PollUntilContextTimeout(ctx, a.interval, a.settle, true, func(ctx context.Context) (bool, error) {
		lb, err := a.octavia.GetLoadBalancer(ctx, id)
		switch {
		case err != nil:
			return false, err
		case lb == nil:
			gone = true
			return true, nil
		}
		// ERROR takes writes too: tagged, the controller finds it and
		// replaces it.
		last = lb.ProvisioningStatus
		return !octavia.Pending(last), nil
	})
	if err != nil && last != "" {
		return false, fmt.Errorf("load balancer %s still %s: %w", id, last, err)
	}
	return !gone && err == nil, err
}
