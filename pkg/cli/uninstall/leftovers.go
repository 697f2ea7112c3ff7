package uninstall

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/kuryr-k8s/kuryr/pkg/names"
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

// list finds the leftovers.
func (r *run) list(ctx context.Context) (leftovers, error) {
	var l leftovers
	n, cluster := r.cloud.Neutron, r.cloud.Config.Kubernetes.ClusterName
	tag := []string{names.ClusterTag(cluster)}
	ports, err := n.ListPorts(ctx, tag, "")
	if err != nil {
		return l, err
	}
	tagged, now := map[string]bool{}, time.Now()
	for i := range ports {
		p := &ports[i]
		tagged[p.ID] = true
		if neutron.CreateFinished(p, r.cloud.Config.Neutron.BindTimeout(), now) {
			l.ports = append(l.ports, p.ID)
		} else {
			l.settling = append(l.settling, p.ID)
		}
	}
	// Recorded ports not tagged: asked one by one, and forgotten once gone
	// (not asked again every pass).
	var still []string
	for _, id := range r.recordedPorts {
		if tagged[id] {
			still = append(still, id)
			continue
		}
		switch p, err := n.GetPort(ctx, id); {
		case neutron.IsNotFound(err) || err == nil && p == nil:
		case err != nil:
			return l, err
		default:
			l.ports, still = append(l.ports, id), append(still, id)
		}
	}
	r.recordedPorts = still
	nets, err := n.ListNetworks(ctx, tag)
	if err != nil {
		return l, err
	}
	for _, x := range nets {
		l.networks = append(l.networks, x.ID)
	}
	groups, err := n.FindSecurityGroups(ctx, tag)
	if err != nil {
		return l, err
	}
	for _, g := range groups {
		l.groups = append(l.groups, g.ID)
	}
	fips, err := n.ListFloatingIPs(ctx, neutron.FloatingIPFilter{Tags: tag})
	if err != nil {
		return l, err
	}
	for _, f := range fips {
		l.floatingIPs = append(l.floatingIPs, f.ID)
	}
	ags, err := n.ListAddressGroups(ctx, "")
	if err != nil {
		return l, err
	}
	for _, ag := range ags {
		if ag.Description == names.PeerAddressGroupDescription(cluster) || ag.Description == names.AddressGroupProbeDescription(cluster) {
			l.addressGroups = append(l.addressGroups, ag.ID)
		}
	}
	l.loadBalancers, err = r.listLoadBalancers(ctx, tag)
	return l, err
}

// listLoadBalancers: the tagged ones and those kuryr's objects recorded
// (none without Octavia: then there is nothing to read them with).
func (r *run) listLoadBalancers(ctx context.Context, tag []string) ([]string, error) {
	o := r.cloud.Octavia
	if o == nil {
		return nil, nil
	}
	lbs, err := o.FindLoadBalancers(ctx, tag)
	if err != nil {
		return nil, err
	}
	var out []string
	seen := map[string]bool{}
	for _, lb := range lbs {
		out, seen[lb.ID] = append(out, lb.ID), true
	}
	var still []string
	for _, id := range r.recordedLBs {
		if seen[id] {
			still = append(still, id)
			continue
		}
		if lb, err := o.GetLoadBalancer(ctx, id); err != nil {
			return nil, err
		} else if lb != nil {
			out, still = append(out, id), append(still, id)
		}
	}
	r.recordedLBs = still
	return out, nil
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
