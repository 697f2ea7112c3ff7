package neutron_test

import (
	"context"
	"testing"

	"github.com/kuryr-k8s/kuryr/pkg/neutron"
	"github.com/kuryr-k8s/kuryr/pkg/neutron/neutrontest"
)

func TestQuotas(t *testing.T) {
	f := neutrontest.New(t)
	f.Quotas = map[string]int{"port": 3, "trunk": -1}
	f.Add("ports", neutrontest.Object{})
	nc := neutron.New(f.Client(t))
	q, project, err := nc.Quotas(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	if project != neutrontest.Project {
		t.Errorf("project %q: want the credential's, %q", project, neutrontest.Project)
	}
	if got := q["port"]; got != (neutron.QuotaUsage{Limit: 3, Used: 1}) || got.Free() != 2 {
		t.Errorf("port: %+v, free %d", got, got.Free())
	}
	if got := q["trunk"].Free(); got != -1 {
		t.Errorf("trunk without a limit: free %d, want -1", got)
	}
	if _, project, err = nc.Quotas(context.Background(), "p2"); err != nil || project != "p2" {
		t.Errorf("a named project: %q, %v", project, err)
	}
}
