package doctor

import (
	"context"

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
	return append(out, ok("policy peers", "NetworkPolicy peers are remote security groups whose members are the peers' ports (kuryr does not use Neutron address groups)"))
}
