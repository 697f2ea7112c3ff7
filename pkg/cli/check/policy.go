package check

import (
	"context"
	"time"

	"github.com/kuryr-k8s/kuryr/pkg/cli/doctor"
)

// policy: a NetworkPolicy admitting no one to pod b stops pod a's
// requests; changed to admit pod a, they pass again (it goes with the
// namespace).
func policy(ctx context.Context, r *run) (doctor.Finding, bool) {
	const c = "NetworkPolicy"
	a, b := r.pods[0], r.pods[1]
	if macvlan(ctx, r.e, b.Spec.NodeName) {
		return warn(c, "not checked: %s is a nested-macvlan node, where kuryr cannot enforce policies (docs/nested.md)",
			b.Spec.NodeName), true
	}
	p := probePolicy(r.ns, "b", "")
	if err := r.e.Client.Create(ctx, p); err != nil {
		return fail(c, "create NetworkPolicy: %v", err), true
	}
	start := time.Now()
	if err := dropped(ctx, r, a, b.Status.PodIP); err != nil {
		return fail(c, "%s still reaches %s %s after a policy admitting no one to it was created: %v "+
			"(kubectl kuryr describe networkpolicy/%s -n %s)", a.Name, b.Name, time.Since(start).Round(time.Second), err,
			policyName, r.ns), true
	}
	denied := time.Since(start)
	if err := serving(ctx, r, b); err != nil {
		return fail(c, "%s's requests to %s went unanswered, but %s itself is not serving: %v", a.Name, b.Name, b.Name, err), true
	}
	p.Spec = probePolicy(r.ns, "b", "a").Spec
	if err := r.e.Client.Update(ctx, p); err != nil {
		return fail(c, "update NetworkPolicy: %v", err), true
	}
	start = time.Now()
	if err := answers(ctx, r, a, b.Status.PodIP, port, []string{b.Name}, r.o.Timeout); err != nil {
		return fail(c, "%s does not reach %s after the policy was changed to admit it: %v", a.Name, b.Name, err), true
	}
	return ok(c, "%s → %s denied %s after a deny-all policy, allowed again %s after it admitted %s",
		a.Name, b.Name, denied.Round(time.Second), time.Since(start).Round(time.Second), a.Name), true
}
