package doctor

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"

	kuryrv1 "github.com/kuryr-k8s/kuryr/api/v1"
	"github.com/kuryr-k8s/kuryr/pkg/cli/env"
)

// features says what of the cloud's capabilities is in force, as the
// controller found them: ClientIP session affinity (which it asks of the
// provider when a Service first needs it) and how NetworkPolicy peers are
// enforced.
func features(ctx context.Context, e *env.Env) []Finding {
	const c = "session affinity"
	var klbs kuryrv1.KuryrLoadBalancerList
	if err := e.Client.List(ctx, &klbs); err != nil {
		return []Finding{fail(c, "list KuryrLoadBalancers: %v", err)}
	}
	var asked, enforced int
	var notEnforced, partial []string
	for _, k := range klbs.Items {
		if k.Spec.AffinityTimeoutSeconds == 0 {
			continue
		}
		asked++
		switch k.Status.SessionAffinity {
		case kuryrv1.AffinityEnforced:
			enforced++
		case kuryrv1.AffinityNotEnforced:
			notEnforced = append(notEnforced, k.Namespace+"/"+k.Name)
		case kuryrv1.AffinityPartial:
			partial = append(partial, k.Namespace+"/"+k.Name)
		}
	}
	out := []Finding{}
	switch {
	case asked == 0:
		out = append(out, ok(c, "no Service asks for ClientIP affinity (the provider is asked whether it implements SOURCE_IP persistence when one does)"))
	case len(notEnforced)+len(partial) > 0:
		out = append(out, warn(c, "of %d Services with ClientIP affinity, %d have it NOT enforced and %d on their UDP/SCTP ports only "+
			"(see their NotEnforced Events): %s", asked, len(notEnforced), len(partial), list(append(notEnforced, partial...))))
	case enforced == asked:
		out = append(out, ok(c, "the %d Services with ClientIP affinity have it enforced (SOURCE_IP session persistence)", asked))
	default:
		out = append(out, ok(c, "%d of %d Services with ClientIP affinity have it enforced (SOURCE_IP session persistence); the others are not converged yet", enforced, asked))
	}
	return append(out, peers(ctx, e), vmNodes(ctx, e))
}

// peers says how NetworkPolicy peers are enforced: the leader's last
// address-group probe (recorded on the node it probed from) and the
// KuryrNetworkPolicies' peers of each kind.
func peers(ctx context.Context, e *env.Env) Finding {
	const c = "policy peers"
	var nodes corev1.NodeList
	if err := e.Client.List(ctx, &nodes); err != nil {
		return fail(c, "list Nodes: %v", err)
	}
	var last kuryrv1.AddressGroupProbe
	var from string
	for _, n := range nodes.Items {
		var r kuryrv1.AddressGroupProbe
		if json.Unmarshal([]byte(n.Annotations[kuryrv1.AddressGroupProbeAnnotation]), &r) == nil && r.Time.After(last.Time) {
			last, from = r, n.Name
		}
	}
	var knps kuryrv1.KuryrNetworkPolicyList
	if err := e.Client.List(ctx, &knps); err != nil {
		return fail(c, "list KuryrNetworkPolicies: %v", err)
	}
	var sgs, ags int
	for _, k := range knps.Items {
		sgs += len(k.Status.PeerGroups)
		ags += len(k.Status.PeerAddressGroups)
	}
	inUse := fmt.Sprintf("%d peers are address groups, %d remote security groups", ags, sgs)
	switch {
	case from == "":
		return warn(c, "no address-group probe answer is recorded on any node (the leader probes at start): peers are "+
			"remote security groups; %s", inUse)
	case last.Off:
		return ok(c, "address groups are turned off ([network_policy] address_groups = false, recorded on node %s at %s): "+
			"peers are remote security groups; %s", from, last.Time.Format(time.RFC3339), inUse)
	case last.AddressGroups:
		return ok(c, "Neutron enforces remote address groups (probed from node %s at %s: %s): peers are address groups; %s",
			from, last.Time.Format(time.RFC3339), last.Detail, inUse)
	case last.Verdict == kuryrv1.AddressGroupsNotEnforced:
		return ok(c, "Neutron does NOT enforce remote address groups (probed from node %s at %s: %s): peers are remote "+
			"security groups; %s", from, last.Time.Format(time.RFC3339), last.Detail, inUse)
	}
	return warn(c, "the address-group probe had no answer (node %s at %s: %s): peers are remote security groups; %s",
		from, last.Time.Format(time.RFC3339), last.Detail, inUse)
}
