package doctor

import (
	"context"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"

	"github.com/kuryr-k8s/kuryr/pkg/cli/env"
	"github.com/kuryr-k8s/kuryr/pkg/controller/nested"
)

// vmNodes says how the nodes' pods are plugged: bound to hypervisor nodes,
// or on VM nodes' ports (the node label kuryr.openstack.org/pod-vif, else
// [kubernetes] pod_vif_driver), and warns where NetworkPolicies cannot be
// enforced (nested-macvlan) or a label names no mode.
func vmNodes(ctx context.Context, e *env.Env) Finding {
	const c = "node modes"
	cloud, err := e.Cloud(ctx)
	if err != nil {
		return warn(c, "kuryr's configuration could not be read (%v): nodes' modes unknown", err)
	}
	var nodes corev1.NodeList
	if err := e.Client.List(ctx, &nodes); err != nil {
		return fail(c, "list Nodes: %v", err)
	}
	byMode := map[string][]string{}
	var bad []string
	for _, n := range nodes.Items {
		mode, err := nested.ModeOf(&n, cloud.Config.Kubernetes.PodVIFDriver)
		if err != nil {
			bad = append(bad, err.Error())
			continue
		}
		byMode[mode] = append(byMode[mode], n.Name)
	}
	summary := modesSummary(byMode)
	switch {
	case len(bad) > 0:
		return fail(c, "%s; %s", list(bad), summary)
	case len(byMode[nested.ModeMacvlan]) > 0:
		return warn(c, "NetworkPolicies are NOT enforced for the pods of the nested-macvlan nodes %s (each pod is a macvlan "+
			"of its VM's port, whose security groups alone filter its traffic; nested-vlan gives pods security groups "+
			"of their own), and a Service does not answer a pod or the node of the VM whose pod it picks as backend "+
			"(one VM port, one OVN connection-tracking zone; see docs/nested.md); %s", list(byMode[nested.ModeMacvlan]), summary)
	}
	return ok(c, "%s", summary)
}

// modesSummary lists the nodes of each mode. Pure.
func modesSummary(byMode map[string][]string) string {
	var parts []string
	for _, m := range slices.Sorted(maps.Keys(byMode)) {
		parts = append(parts, m+": "+list(byMode[m]))
	}
	if len(parts) == 0 {
		return "no nodes"
	}
	return list(parts)
}
