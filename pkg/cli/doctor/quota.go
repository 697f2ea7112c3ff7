package doctor

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/kuryr-k8s/kuryr/pkg/cli/env"
	"github.com/kuryr-k8s/kuryr/pkg/neutron"
)

// lowHeadroom: less than this fraction of a limit left is a warning.
const lowHeadroom = 0.1

// quota checks the headroom of the project kuryr creates in
// ([neutron_defaults] project, else the credential's own).
func quota(ctx context.Context, e *env.Env) []Finding {
	const c = "quota"
	cloud, err := e.Cloud(ctx)
	if err != nil {
		return []Finding{fail(c, "not checked: no OpenStack connection")}
	}
	q, project, err := cloud.Neutron.Quotas(ctx, cloud.Config.NeutronDefaults.Project)
	if err != nil {
		if neutron.Forbidden(err) {
			// Neutron shows a project's own quota details to its members;
			// another project's only to an admin.
			return []Finding{warn(c, "not checked: Neutron refuses project %s's quota details to kuryr's credential "+
				"(reading another project's needs admin)", project)}
		}
		return []Finding{warn(c, "not checked: %v", err)}
	}
	return []Finding{judgeQuota(project, q)}
}

// judgeQuota: FAIL when a resource kuryr creates, in use, has no headroom
// left; WARN under lowHeadroom of its limit, or for a limit of 0 (a cloud
// that allows no floating IPs: LoadBalancer Services get none); else OK.
// The message names each limited resource's use. Pure.
func judgeQuota(project string, q map[string]neutron.QuotaUsage) Finding {
	const c = "quota"
	var uses, exhausted, low, none []string
	for _, res := range neutron.KuryrResources {
		u, ok := q[res]
		if !ok || u.Limit < 0 {
			continue
		}
		uses = append(uses, fmt.Sprintf("%s %d/%d", res, u.Used+u.Reserved, u.Limit))
		switch free := u.Free(); {
		case u.Limit == 0:
			none = append(none, res)
		case free == 0:
			exhausted = append(exhausted, res)
		case float64(free) < lowHeadroom*float64(u.Limit):
			low = append(low, fmt.Sprintf("%s (%d left)", res, free))
		}
	}
	use := "no limits on what kuryr creates"
	if len(uses) > 0 {
		use = "used/limit: " + strings.Join(uses, ", ")
	}
	switch {
	case len(exhausted) > 0:
		return fail(c, "project %s has no %s left: creates fail (pods without ports, policies not applied); %s",
			project, strings.Join(exhausted, ", "), use)
	case len(low) > 0 || len(none) > 0:
		slices.Sort(low)
		var says []string
		if len(low) > 0 {
			says = append(says, "close to its quota: "+strings.Join(low, ", "))
		}
		if len(none) > 0 {
			says = append(says, "may create no "+strings.Join(none, ", ")+" (limit 0)")
		}
		return warn(c, "project %s is %s; %s", project, strings.Join(says, "; "), use)
	}
	return ok(c, "project %s: %s", project, use)
}
