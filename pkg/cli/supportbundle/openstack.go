package supportbundle

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"

	"github.com/kuryr-k8s/kuryr/pkg/cli/doctor"
	"github.com/kuryr-k8s/kuryr/pkg/cli/env"
	"github.com/kuryr-k8s/kuryr/pkg/cli/output"
)

// collectOpenStack: what kuryr owns in OpenStack for the cluster
// (env.Cloud.ListOwned), with kuryr's own credentials; a kind that cannot
// be listed is named in errors.txt.
func collectOpenStack(ctx context.Context, e *env.Env, b *bundle) {
	cloud, err := e.Cloud(ctx)
	if err != nil {
		b.fail("openstack", err)
		return
	}
	o, err := cloud.ListOwned(ctx)
	if err != nil {
		b.fail("openstack", err)
	}
	parts := map[string]any{"ports": o.Ports, "networks": o.Networks, "security groups": o.SecurityGroups,
		"floating IPs": o.FloatingIPs, "address groups": o.AddressGroups}
	if cloud.Octavia != nil {
		parts["load balancers"] = o.LoadBalancers
	}
	for kind, v := range parts {
		if o.Unlisted[kind] { // named in errors.txt, not written as empty
			continue
		}
		name := strings.ReplaceAll(kind, " ", "-")
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
