package doctor

import (
	"context"
	"strings"
	"testing"

	"github.com/kuryr-k8s/kuryr/pkg/cli/clitest"
	"github.com/kuryr-k8s/kuryr/pkg/neutron"
	"github.com/kuryr-k8s/kuryr/pkg/neutron/neutrontest"
)

func TestJudgeQuota(t *testing.T) {
	for _, tc := range []struct {
		name   string
		q      map[string]neutron.QuotaUsage
		status string
		says   string
	}{
		{"plenty", map[string]neutron.QuotaUsage{"port": {Limit: 500, Used: 40}, "trunk": {Limit: -1, Used: 3}},
			OK, "project p: used/limit: port 40/500"},
		{"no limits", map[string]neutron.QuotaUsage{"port": {Limit: -1, Used: 4000}}, OK, "no limits on what kuryr creates"},
		{"reserved counts", map[string]neutron.QuotaUsage{"port": {Limit: 100, Used: 85, Reserved: 10}},
			Warn, "close to its quota: port (5 left); used/limit: port 95/100"},
		{"rules exhausted", map[string]neutron.QuotaUsage{"port": {Limit: 500, Used: 10}, "security_group_rule": {Limit: 100, Used: 100}},
			Fail, "has no security_group_rule left"},
		{"over the limit (lowered since)", map[string]neutron.QuotaUsage{"port": {Limit: 10, Used: 12}}, Fail, "has no port left"},
		{"no floating IPs at all", map[string]neutron.QuotaUsage{"port": {Limit: 500}, "floatingip": {Limit: 0}},
			Warn, "may create no floatingip (limit 0)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := judgeQuota("p", tc.q)
			if f.Status != tc.status || !strings.Contains(f.Message, tc.says) {
				t.Errorf("%s %q; want %s containing %q", f.Status, f.Message, tc.status, tc.says)
			}
		})
	}
}

// TestQuotaFromNeutron: the check reads the quota details of the project
// kuryr creates in ([neutron_defaults] project, p1 in clitest's
// configuration) from Neutron.
func TestQuotaFromNeutron(t *testing.T) {
	f := clitest.New(t)
	f.Neutron.Quotas = map[string]int{"port": 2}
	f.Neutron.Add("ports", neutrontest.Object{})
	f.Neutron.Add("ports", neutrontest.Object{})
	got := quota(context.Background(), f.Env(t))
	if len(got) != 1 || got[0].Status != Fail || !strings.Contains(got[0].Message, "project p1 has no port left") {
		t.Errorf("%+v", got)
	}
}
