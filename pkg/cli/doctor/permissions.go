package doctor

import (
	"context"
	"fmt"

	"github.com/kuryr-k8s/kuryr/pkg/cli/env"
	"github.com/kuryr-k8s/kuryr/pkg/names"
	"github.com/kuryr-k8s/kuryr/pkg/neutron"
)

// policyHint is what an operator does about a missing Neutron permission.
const policyHint = "install deploy/openstack-policy/neutron-kuryr.yaml on every neutron-server and give " +
	"kuryr's user the role kuryr in its project (docs/install.md)"

// permissions checks that the credential may do what kuryr does beyond a
// project member: bind a port to a node and read the binding. Neutron has
// no "may I" API, so it creates a port doing exactly that, tagged
// names.ProbeTag, and deletes it at once (a leftover of an interrupted run
// first).
func permissions(ctx context.Context, e *env.Env) (out []Finding) {
	const c = "permissions"
	cloud, err := e.Cloud(ctx)
	if err != nil {
		return []Finding{fail(c, "not checked: no OpenStack connection")}
	}
	cfg := cloud.Config
	if cfg.NeutronDefaults.PodSubnet == "" {
		return []Finding{warn(c, "not checked: no [neutron_defaults] pod_subnet to create a probe port on")}
	}
	nc := cloud.Neutron
	tags := []string{names.ClusterTag(cfg.Kubernetes.ClusterName), names.ProbeTag}
	if err := deleteProbes(ctx, nc, tags); err != nil {
		return []Finding{fail(c, "%v", err)}
	}
	sub, err := nc.GetSubnet(ctx, cfg.NeutronDefaults.PodSubnet)
	if err != nil {
		return []Finding{fail(c, "not checked: pod_subnet: %v", err)}
	}
	p, err := nc.CreatePort(ctx, neutron.PortSpec{Name: names.ProbeTag, NetworkID: sub.NetworkID, SubnetID: sub.ID,
		ProjectID: cfg.NeutronDefaults.Project, HostID: names.ProbeTag, DeviceOwner: "compute:kuryr", Tags: tags})
	if p != nil {
		defer func() {
			if err := nc.DeletePort(context.WithoutCancel(ctx), p.ID); err != nil {
				out = append(out, warn(c, "the probe port %s is left (the next doctor run deletes it): %v", p.ID, err))
			}
		}()
	}
	return judgeProbe(p, err)
}

// judgeProbe says what the probe port's creation shows.
func judgeProbe(p *neutron.Port, err error) []Finding {
	const c = "permissions"
	if err != nil {
		if neutron.Forbidden(err) {
			return []Finding{fail(c, "Neutron refuses to bind a port to a node (policy create_port:binding:host_id): "+
				"every pod would fail; %s", policyHint)}
		}
		return []Finding{fail(c, "creating a probe port bound to a node: %v", err)}
	}
	if p.HostID == "" {
		return []Finding{fail(c, "Neutron hides ports' binding (policy get_port:binding:host_id): "+
			"kuryr cannot tell which node a port is bound to; %s", policyHint)}
	}
	return []Finding{ok(c, "the credential may bind ports to nodes and read their binding (a probe port, deleted)")}
}

func deleteProbes(ctx context.Context, nc *neutron.Client, tags []string) error {
	old, err := nc.ListPorts(ctx, tags, "")
	if err != nil {
		return fmt.Errorf("listing leftover probe ports: %w", err)
	}
	for _, p := range old {
		if err := nc.DeletePort(ctx, p.ID); err != nil {
			return err
		}
	}
	return nil
}
