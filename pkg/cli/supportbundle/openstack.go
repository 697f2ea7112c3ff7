package supportbundle

import (
	"bytes"
	"context"
	"encoding/json"

	"github.com/kuryr-k8s/kuryr/pkg/cli/doctor"
	"github.com/kuryr-k8s/kuryr/pkg/cli/env"
	"github.com/kuryr-k8s/kuryr/pkg/cli/output"
	"github.com/kuryr-k8s/kuryr/pkg/names"
	"github.com/kuryr-k8s/kuryr/pkg/neutron"
)

// collectOpenStack: the Neutron and Octavia objects tagged for the
// cluster (and its address groups, which take no tags), with kuryr's own
// credentials.
func collectOpenStack(ctx context.Context, e *env.Env, b *bundle) {
	cloud, err := e.Cloud(ctx)
	if err != nil {
		b.fail("openstack", err)
		return
	}
	cluster := cloud.Config.Kubernetes.ClusterName
	tag := []string{names.ClusterTag(cluster)}
	n := cloud.Neutron
	parts := map[string]func() (any, error){
		"ports":           func() (any, error) { return n.ListPorts(ctx, tag, "") },
		"networks":        func() (any, error) { return n.ListNetworks(ctx, tag) },
		"security-groups": func() (any, error) { return n.FindSecurityGroups(ctx, tag) },
		"floating-ips":    func() (any, error) { return n.ListFloatingIPs(ctx, neutron.FloatingIPFilter{Tags: tag}) },
		"address-groups": func() (any, error) {
			ags, err := n.ListAddressGroups(ctx, "")
			var mine []neutron.AddressGroup
			for _, ag := range ags {
				if ag.Description == names.PeerAddressGroupDescription(cluster) || ag.Description == names.AddressGroupProbeDescription(cluster) {
					mine = append(mine, ag)
				}
			}
			return mine, err
		},
	}
	if cloud.Octavia != nil {
		parts["load-balancers"] = func() (any, error) { return cloud.Octavia.FindLoadBalancers(ctx, tag) }
	}
	for name, list := range parts {
		v, err := list()
		if err != nil {
			b.fail("openstack/"+name, err)
			continue
		}
		out, err := json.MarshalIndent(v, "", "  ")
		if err != nil {
			b.fail("openstack/"+name, err)
			continue
		}
		b.add("openstack/"+name+".json", out)
	}
}

// collectDoctor: doctor's findings, as a table.
func collectDoctor(ctx context.Context, e *env.Env, b *bundle) {
	var out bytes.Buffer
	if _, err := doctor.Run(ctx, e, output.Table, &out); err != nil {
		b.fail("doctor", err)
	}
	b.add("doctor.txt", out.Bytes())
}
