package neutrontest

import (
	"net/http"

	"github.com/kuryr-k8s/kuryr/pkg/openstack/openstacktest"
)

// Project is the project the fake's credential is scoped to (quotas/tenant).
const Project = "fake-project"

// defaultQuotas are Neutron's defaults ([quotas] in neutron.conf): the
// limits the fake reports unless a test sets Quotas.
var defaultQuotas = map[string]int{
	"network": 100, "subnet": 100, "port": 500, "router": 10, "floatingip": 50,
	"security_group": 10, "security_group_rule": 100, "trunk": -1, "subnetpool": -1, "rbac_policy": 10,
}

// quotaCollections: which stored collection a quota resource counts.
var quotaCollections = map[string]string{
	"network": "networks", "subnet": "subnets", "port": "ports", "router": "routers", "floatingip": "floatingips",
	"security_group": "security-groups", "security_group_rule": "security-group-rules", "trunk": "trunks",
	"subnetpool": "subnetpools", "rbac_policy": "rbac-policies",
}

// quotas serves GET quotas/tenant (the credential's project) and GET
// quotas/{project}/details: limits from Quotas over Neutron's defaults,
// used = the stored objects (the fake keeps one project), reserved 0.
func (f *Fake) quotas(w http.ResponseWriter, r *http.Request, parts []string) {
	switch {
	case r.Method == http.MethodGet && len(parts) == 1 && parts[0] == "tenant":
		openstacktest.WriteJSON(w, 200, Object{"tenant": Object{"tenant_id": Project}})
	case r.Method == http.MethodGet && len(parts) == 2 && parts[1] == "details":
		f.mu.Lock()
		defer f.mu.Unlock()
		out := Object{}
		for res, limit := range defaultQuotas {
			if l, ok := f.Quotas[res]; ok {
				limit = l
			}
			out[res] = Object{"limit": limit, "used": f.objects.Count(quotaCollections[res]), "reserved": 0}
		}
		openstacktest.WriteJSON(w, 200, Object{"quota": out})
	default:
		openstacktest.WriteJSON(w, 404, Object{"NeutronError": Object{"type": "NotFound", "message": r.Method + " " + r.URL.Path}})
	}
}
