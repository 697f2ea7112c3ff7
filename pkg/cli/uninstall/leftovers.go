package uninstall

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/kuryr-k8s/kuryr/pkg/neutron"
	"github.com/kuryr-k8s/kuryr/pkg/octavia"
)

// leftovers is everything of kuryr's still in OpenStack, listed directly
// rather than through the sweep's notion of an orphan: every object tagged
// for the cluster, the address groups described as the cluster's (they
// take no tags), and the ports and load balancers kuryr's objects recorded
// (a port whose tagging failed has no other record).
type leftovers struct {
	ports, networks, groups, floatingIPs, loadBalancers, addressGroups []string
	// settling are ports Neutron may still be creating (a request of the
	// stopped controller's): deleted once done (neutron.CreateFinished),
	// since a port deleted meanwhile can leave a stale OVN port.
	settling []string
}

func (l leftovers) count() int {
	return len(l.ports) + len(l.settling) + len(l.networks) + len(l.groups) + len(l.floatingIPs) + len(l.loadBalancers) + len(l.addressGroups)
}

func (l leftovers) String() string {
	var parts []string
	for _, k := range []struct {
		what string
		ids  []string
	}{{"ports", l.ports}, {"ports still being created", l.settling}, {"networks", l.networks}, {"security groups", l.groups}, {"floating IPs", l.floatingIPs},
		{"load balancers", l.loadBalancers}, {"address groups", l.addressGroups}} {
		if len(k.ids) > 0 {
			parts = append(parts, fmt.Sprintf("%d %s (%s)", len(k.ids), k.what, strings.Join(k.ids, ", ")))
		}
	}
	if len(parts) == 0 {
		return "nothing"
	}
	return strings.Join(parts, ", ")
}

// list finds the leftovers: what kuryr owns (env.Cloud.ListOwned) and
// what kuryr's objects recorded that still exists.
func (r *run) list(ctx context.Context) (leftovers, error) {
	var l leftovers
	o, err := r.cloud.ListOwned(ctx)
	if err != nil {
		return l, err
	}
	now := time.Now()
	for i := range o.Ports {
		p := &o.Ports[i]
		if neutron.CreateFinished(p, r.cloud.Config.Neutron.BindTimeout(), now) {
			l.ports = append(l.ports, p.ID)
		} else {
			l.settling = append(l.settling, p.ID)
		}
	}
	l.networks = ids(o.Networks, func(x neutron.Network) string { return x.ID })
	l.groups = ids(o.SecurityGroups, func(x neutron.SecurityGroup) string { return x.ID })
	l.floatingIPs = ids(o.FloatingIPs, func(x neutron.FloatingIP) string { return x.ID })
	l.addressGroups = ids(o.AddressGroups, func(x neutron.AddressGroup) string { return x.ID })
	l.loadBalancers = ids(o.LoadBalancers, func(x octavia.LoadBalancer) string { return x.ID })
	var extra []string
	r.recordedPorts, extra, err = stillThere(r.recordedPorts, append(l.ports, l.settling...), func(id string) (bool, error) {
		p, err := r.cloud.Neutron.GetPort(ctx, id)
		if neutron.IsNotFound(err) {
			return false, nil
		}
		return p != nil, err
	})
	if err != nil {
		return l, err
	}
	l.ports = append(l.ports, extra...)
	if r.cloud.Octavia == nil {
		return l, nil
	}
	r.recordedLBs, extra, err = stillThere(r.recordedLBs, l.loadBalancers, func(id string) (bool, error) {
		lb, err := r.cloud.Octavia.GetLoadBalancer(ctx, id)
		return lb != nil, err
	})
	l.loadBalancers = append(l.loadBalancers, extra...)
	return l, err
}

func ids[T any](items []T, id func(T) string) []string {
	var out []string
	for _, x := range items {
		out = append(out, id(x))
	}
	return out
}

// stillThere checks the recorded ids that are not among listed: it
// returns the recorded ids still worth asking about next pass (listed, or
// found) and those found that the listing missed. Gone ones are forgotten,
// so that they are not asked about every pass.
func stillThere(recorded, listed []string, exists func(string) (bool, error)) (keep, found []string, err error) {
	in := map[string]bool{}
	for _, id := range listed {
		in[id] = true
	}
	for _, id := range recorded {
		if in[id] {
			keep = append(keep, id)
			continue
		}
		ok, err := exists(id)
		if err != nil {
			return recorded, nil, err
		}
		if ok {
			keep, found = append(keep, id), append(found, id)
		}
	}
	return keep, found, nil
}

// remove deletes what the sweep's classes do not cover (the probes'
// leftovers, recorded ports and load balancers, groups of a feature since
// turned off): ports (detached from their trunk first), groups and address
// groups (still in use: the next pass), floating IPs, load balancers
// (cascade). Networks are the sweep's (their router interfaces first).
func (r *run) remove(ctx context.Context, l leftovers) error {
	n := r.cloud.Neutron
	var errs []error
	for _, id := range l.floatingIPs {
		errs = append(errs, n.DeleteFloatingIP(ctx, id))
	}
	for _, id := range l.ports {
		errs = append(errs, n.DeletePort(ctx, id))
	}
	for _, id := range l.groups {
		if err := n.DeleteSecurityGroup(ctx, id); err != nil && !neutron.InUse(err) {
			errs = append(errs, err)
		}
	}
	for _, id := range l.addressGroups {
		if err := n.DeleteAddressGroup(ctx, id); err != nil && !neutron.InUse(err) {
			errs = append(errs, err)
		}
	}
	if r.cloud.Octavia != nil {
		for _, id := range l.loadBalancers {
			if err := r.cloud.Octavia.DeleteLoadBalancer(ctx, id); err != nil && !octavia.Busy(err) {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}
