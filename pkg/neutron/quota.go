package neutron

import (
	"context"
	"fmt"
)

// KuryrResources are the quota resources kuryr creates: a port per pod
// (subports are ports), security groups and rules per policy, networks and
// subnets per namespace or node, floating IPs per LoadBalancer Service.
var KuryrResources = []string{"port", "security_group", "security_group_rule", "network", "subnet", "floatingip"}

// QuotaUsage is one resource's quota in a project, as Neutron's quota
// details say: Limit (-1: none), Used, Reserved (being created).
type QuotaUsage struct {
	Limit    int `json:"limit"`
	Used     int `json:"used"`
	Reserved int `json:"reserved"`
}

// Free is what can still be created; -1 when there is no limit.
func (q QuotaUsage) Free() int {
	if q.Limit < 0 {
		return -1
	}
	return max(q.Limit-q.Used-q.Reserved, 0)
}

// Quotas returns the quota details of a project, resource → usage; an
// empty project is the credential's own (Neutron's quotas/tenant). It also
// returns the project asked about.
func (c *Client) Quotas(ctx context.Context, project string) (map[string]QuotaUsage, string, error) {
	if project == "" {
		var own struct {
			Tenant struct {
				ID string `json:"tenant_id"`
			} `json:"tenant"`
		}
		if _, err := c.sc.Get(ctx, c.sc.ServiceURL("quotas", "tenant"), &own, nil); err != nil {
			return nil, "", fmt.Errorf("the credential's project (quotas/tenant): %w", err)
		}
		if own.Tenant.ID == "" {
			return nil, "", fmt.Errorf("the credential's project (quotas/tenant): Neutron named none")
		}
		project = own.Tenant.ID
	}
	var body struct {
		Quota map[string]QuotaUsage `json:"quota"`
	}
	if _, err := c.sc.Get(ctx, c.sc.ServiceURL("quotas", project, "details"), &body, nil); err != nil {
		return nil, project, fmt.Errorf("quota details of project %s: %w", project, err)
	}
	return body.Quota, project, nil
}
