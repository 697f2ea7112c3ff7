package doctor

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kuryr-k8s/kuryr/pkg/cli/env"
	"github.com/kuryr-k8s/kuryr/pkg/config"
	"github.com/kuryr-k8s/kuryr/pkg/controller/cleanup"
	"github.com/kuryr-k8s/kuryr/pkg/controller/nested"
	"github.com/kuryr-k8s/kuryr/pkg/names"
	"github.com/kuryr-k8s/kuryr/pkg/neutron"
	"github.com/kuryr-k8s/kuryr/pkg/octavia"
	"github.com/kuryr-k8s/kuryr/pkg/openstack"
)

func configuration(ctx context.Context, e *env.Env) []Finding {
	const c = "config"
	l, err := env.LoadConfig(ctx, e.Client, e.KuryrNamespace, e.Overrides)
	if err != nil {
		return []Finding{fail(c, "%v", err)}
	}
	defer l.Cleanup()
	if err := l.Config.ValidateController(); err != nil {
		return []Finding{fail(c, "ConfigMap %s: invalid for kuryr-controller: %s", names.ConfigMap,
			strings.ReplaceAll(err.Error(), "\n", "; "))}
	}
	out := []Finding{ok(c, "ConfigMap %s is a valid configuration (cluster %s)", names.ConfigMap, l.Config.Kubernetes.ClusterName)}
	for _, w := range l.Warnings {
		out = append(out, warn(c, "%s", w))
	}
	return out
}

func openStack(ctx context.Context, e *env.Env) []Finding {
	const c = "openstack"
	cloud, err := e.Cloud(ctx)
	if err != nil {
		reason := err.Error()
		if errors.As(err, new(*openstack.ConnectError)) {
			reason = openstack.Explain(err)
		}
		return []Finding{fail(c, "cannot reach OpenStack with the configured credentials: %s", reason)}
	}
	cluster := cloud.Config.Kubernetes.ClusterName
	ports, err := cloud.Neutron.ListPorts(ctx, []string{names.ClusterTag(cluster)}, "")
	if err != nil {
		return []Finding{fail(c, "Neutron: %v", err)}
	}
	out := []Finding{}
	if cloud.Identity != "" {
		out = append(out, ok(c, "authenticated: %s", cloud.Identity))
	}
	out = append(out, ok(c, "Neutron answers: %d ports tagged %s", len(ports), names.ClusterTag(cluster)))
	for _, w := range cloud.OpenStackWarnings {
		out = append(out, warn(c, "%s", w))
	}
	if cloud.Octavia == nil {
		if cloud.Config.Services() {
			out = append(out, fail(c, "service_subnet is set but there is no Octavia endpoint"))
		}
		return out
	}
	lbs, err := cloud.Octavia.FindLoadBalancers(ctx, []string{names.ClusterTag(cluster)})
	if err != nil {
		return append(out, fail(c, "Octavia: %v", err))
	}
	return append(out, ok(c, "Octavia answers: %d load balancers of this cluster", len(lbs)))
}

// neutronObjects checks that what the configuration names exists.
func neutronObjects(ctx context.Context, e *env.Env) []Finding {
	const c = "neutron objects"
	cloud, err := e.Cloud(ctx)
	if err != nil {
		return []Finding{fail(c, "not checked: no OpenStack connection")}
	}
	var missing, found []string
	probe := func(what, id string, get func() error) {
		if id == "" {
			return
		}
		if err := get(); err != nil {
			missing = append(missing, fmt.Sprintf("%s %s (%s)", what, id, shortErr(err)))
			return
		}
		found = append(found, what)
	}
	for _, p := range probes(ctx, cloud) {
		probe(p.what, p.id, p.get)
	}
	if len(missing) > 0 {
		return []Finding{fail(c, "configured objects missing or unreadable: %s", strings.Join(missing, "; "))}
	}
	return []Finding{ok(c, "configured objects exist: %s", strings.Join(found, ", "))}
}

type probeSpec struct {
	what, id string
	get      func() error
}

func probes(ctx context.Context, cloud *env.Cloud) []probeSpec {
	cfg, nc := cloud.Config, cloud.Neutron
	subnet := func(id string) func() error {
		return func() error { _, err := nc.GetSubnet(ctx, id); return err }
	}
	var ps []probeSpec
	// Namespace and node modes take their subnets from the pool and attach
	// them to the router; default mode uses the one pod subnet.
	if d := cfg.Kubernetes.PodSubnetsDriver; d == config.SubnetDriverNamespace || d == config.SubnetDriverNode {
		ps = append(ps, probeSpec{"pod_subnet_pool", cfg.NamespaceSubnet.PodSubnetPool, func() error {
			_, err := nc.SubnetPoolPrefixes(ctx, cfg.NamespaceSubnet.PodSubnetPool)
			return err
		}}, probeSpec{"pod_router", cfg.NamespaceSubnet.PodRouter, func() error {
			found, err := nc.RouterExists(ctx, cfg.NamespaceSubnet.PodRouter)
			if err == nil && !found {
				err = errors.New("not found")
			}
			return err
		}})
	} else {
		ps = append(ps, probeSpec{"pod_subnet", cfg.NeutronDefaults.PodSubnet, subnet(cfg.NeutronDefaults.PodSubnet)})
	}
	ps = append(ps, probeSpec{"service_subnet", cfg.NeutronDefaults.ServiceSubnet, subnet(cfg.NeutronDefaults.ServiceSubnet)})
	for _, sg := range cfg.NeutronDefaults.PodSecurityGroups {
		ps = append(ps, probeSpec{"pod_security_groups", sg, func() error { _, err := nc.GetSecurityGroup(ctx, sg); return err }})
	}
	ps = append(ps, probeSpec{"external_svc_net", cfg.NeutronDefaults.ExternalSvcNet, func() error {
		_, err := nc.GetNetwork(ctx, cfg.NeutronDefaults.ExternalSvcNet)
		return err
	}})
	return ps
}

// orphans runs the sweep's own selection as a dry run.
func orphans(ctx context.Context, e *env.Env) []Finding {
	const c = "orphans"
	cloud, err := e.Cloud(ctx)
	if err != nil {
		return []Finding{fail(c, "not checked: no OpenStack connection")}
	}
	s, pools := Sweeper(e, cloud, e.Client)
	o, err := s.DryRun(ctx, pools)
	if err != nil {
		return []Finding{fail(c, "listing for orphans: %v", err)}
	}
	if o.Count() == 0 {
		return []Finding{ok(c, "no leaked kuryr-tagged objects")}
	}
	var out []Finding
	stuck := stuckDeleting(o.LoadBalancers, time.Now())
	if len(stuck) > 0 {
		out = append(out, fail(c, "%d load balancers stuck PENDING_DELETE (%s): Octavia refuses every write to them, "+
			"so the sweep cannot delete them; %s", len(stuck), list(stuck), octavia.StuckDeleteRemedy))
		o.LoadBalancers = slices.DeleteFunc(o.LoadBalancers, func(lb octaviaLB) bool { return slices.Contains(stuck, lb.ID) })
	}
	if o.Count() > 0 {
		out = append(out, warn(c, "%d leaked kuryr-tagged objects: %s; the controller's sweep deletes them "+
			"(every [controller] cleanup_period; objects younger than %s are spared)", o.Count(), DescribeOrphans(o), cleanup.MinAge))
	}
	return out
}

// Sweeper is the controller's sweep as the plugin runs it with cloud's
// configuration: owners are looked up through owners (the cluster, or
// nothing at all for kubectl kuryr uninstall), VM nodes through the
// cluster. pools says whether port pools are on.
func Sweeper(e *env.Env, cloud *env.Cloud, owners client.Reader) (s *cleanup.Sweeper, pools bool) {
	cfg := cloud.Config
	s = &cleanup.Sweeper{Client: owners, Neutron: cloud.Neutron, Cluster: cfg.Kubernetes.ClusterName,
		Router:    cfg.NamespaceSubnet.PodRouter,
		NodePorts: cfg.NeutronDefaults.NodeSubnet != "", RefusePorts: cfg.Kubernetes.RefuseUnserved && cfg.Services(),
		BindTimeout: cfg.Neutron.BindTimeout()}
	if cloud.Octavia != nil {
		s.Octavia, s.FloatingIPs, s.Groups = cloud.Octavia, cloud.Neutron, cloud.Neutron
	}
	if cfg.NetworkPolicy.Enabled {
		s.Policies, s.AddressGroups = cloud.Neutron, cloud.Neutron
	}
	// Pods' pairs on nested-macvlan nodes' VM ports, as the sweep reads them.
	s.VMPairs = nested.NewPlacer(cloud.Neutron, e.Client, cfg.Kubernetes.PodVIFDriver, cfg.PodVIFNested.WorkerNodesSubnets,
		cfg.PodVIFNested.RevUpdateAttempts)
	// Pools run in default and node modes.
	return s, cfg.Kubernetes.VIFPoolDriver == "neutron" && cfg.Kubernetes.PodSubnetsDriver != config.SubnetDriverNamespace
}

// stuckDeleting lists the load balancers PENDING_DELETE for longer than
// octavia.StuckDelete since their last change.
func stuckDeleting(lbs []octaviaLB, now time.Time) []string {
	var ids []string
	for _, lb := range lbs {
		if lb.ProvisioningStatus == "PENDING_DELETE" && !lb.UpdatedAt.IsZero() && now.Sub(lb.UpdatedAt) > octavia.StuckDelete {
			ids = append(ids, lb.ID)
		}
	}
	return ids
}

func DescribeOrphans(o cleanup.Orphans) string {
	var parts []string
	add := func(kind string, ids []string) {
		if len(ids) > 0 {
			parts = append(parts, fmt.Sprintf("%d %s (%s)", len(ids), kind, list(ids)))
		}
	}
	add("ports", ids(o.Ports, func(p neutron.Port) string { return p.ID }))
	add("networks", ids(o.Networks, func(n neutron.Network) string { return n.ID }))
	add("load balancers", ids(o.LoadBalancers, func(l octaviaLB) string { return l.ID }))
	add("floating IPs", ids(o.FloatingIPs, func(f neutron.FloatingIP) string { return f.ID }))
	add("source groups", ids(o.SourceGroups, func(g neutron.SecurityGroup) string { return g.ID }))
	add("policy groups", ids(o.PolicyGroups, func(g neutron.SecurityGroup) string { return g.ID }))
	add("peer address groups", slices.Sorted(maps.Keys(o.PeerAddressGroups)))
	if n := o.PairCount(); n > 0 {
		parts = append(parts, fmt.Sprintf("%d allowed address pairs of gone nested-macvlan pods on VM ports (%s)",
			n, list(slices.Sorted(maps.Keys(o.Pairs)))))
	}
	return strings.Join(parts, ", ")
}

func ids[T any](items []T, id func(T) string) []string {
	out := make([]string, 0, len(items))
	for _, it := range items {
		out = append(out, id(it))
	}
	return out
}
