package quota

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/kuryr-k8s/kuryr/pkg/neutron"
	"github.com/kuryr-k8s/kuryr/pkg/neutron/neutrontest"
)

type failing struct{}

func (failing) Quotas(context.Context, string) (map[string]neutron.QuotaUsage, string, error) {
	return nil, "", errors.New("403 Forbidden")
}

func TestHeadroomFromNeutron(t *testing.T) {
	f := neutrontest.New(t)
	f.Quotas = map[string]int{"port": 10, "security_group_rule": -1}
	for range 3 {
		f.Add("ports", neutrontest.Object{})
	}
	f.Quotas["floatingip"] = 0 // a cloud without floating IPs: a limit, not a used-up quota
	nc := neutron.New(f.Client(t))
	project, err := read(context.Background(), nc, "")
	if err != nil || project != neutrontest.Project {
		t.Fatalf("%q, %v", project, err)
	}
	reg := prometheus.NewRegistry()
	MustRegister(reg)
	want := `# HELP kuryr_quota_free_count What the project kuryr creates in may still create of a Neutron resource: its limit less used and reserved (resources without a limit are not exported).
# TYPE kuryr_quota_free_count gauge
kuryr_quota_free_count{resource="network"} 100
kuryr_quota_free_count{resource="port"} 7
kuryr_quota_free_count{resource="security_group"} 10
kuryr_quota_free_count{resource="subnet"} 100
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "kuryr_quota_free_count"); err != nil {
		t.Error(err)
	}
	if got := testutil.ToFloat64(limit.WithLabelValues("port")); got != 10 {
		t.Errorf("port limit %v", got)
	}
	if got := testutil.ToFloat64(limit.WithLabelValues("floatingip")); got != 0 {
		t.Errorf("floatingip limit %v", got)
	}
	// A reading that fails removes the headroom rather than keep a stale one.
	if _, err := read(context.Background(), failing{}, project); err == nil {
		t.Fatal("no error")
	}
	if n := testutil.CollectAndCount(free); n != 0 {
		t.Errorf("%d series left after a failed reading", n)
	}
}
