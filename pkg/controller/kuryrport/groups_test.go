package kuryrport

import (
	"context"
	"slices"
	"testing"
	"time"

	kuryrv1 "github.com/kuryr-k8s/kuryr/api/v1"
	"github.com/kuryr-k8s/kuryr/pkg/controller/portgroups"
	"github.com/kuryr-k8s/kuryr/pkg/names"
	"github.com/kuryr-k8s/kuryr/pkg/neutron"
	"github.com/kuryr-k8s/kuryr/pkg/neutron/neutrontest"
)

// switchable answers the groups it is told to, or that they are not ready
// (failing closed on what it holds).
type switchable struct {
	groups   []string
	notReady bool
}

func (s *switchable) Groups(context.Context, *kuryrv1.KuryrPort) ([]string, error) {
	if s.notReady {
		return nil, &portgroups.GroupsNotReady{Groups: s.groups, Cause: portgroups.ErrGroupsNotReady}
	}
	return s.groups, nil
}

func portGroups(t *testing.T, e *env, id string) []string {
	t.Helper()
	var out []string
	switch gs := e.fake.Get("ports", id)["security_groups"].(type) {
	case []string:
		out = slices.Clone(gs)
	case []any:
		for _, g := range gs {
			out = append(out, g.(string))
		}
	}
	slices.Sort(out)
	return out
}

// TestNotReadyFailsClosed: while a policy's group is not ready, a port
// that exists already (a pod running, or a port made before the policy
// changed and not yet reported) carries the groups that fail closed, never
// the old ones; a new pod waits for its port.
func TestNotReadyFailsClosed(t *testing.T) {
	for _, plugged := range []bool{true, false} {
		e := newEnv(t, kp("web", "uid-1"))
		src := &switchable{groups: []string{"sg-old-policy", "sg-open-egress"}}
		e.r.Groups, e.r.GroupPorts = src, e.r.Neutron.(*neutron.Client)
		if plugged {
			if err := e.reconcile(t, "web"); err != nil {
				t.Fatal(err)
			}
		} else { // made with the old policy's group, not bound yet
			e.fake.Add("ports", neutrontest.Object{
				"network_id": e.fake.Get("subnets", e.subnet)["network_id"], "mac_address": "fa:16:3e:00:00:01",
				"status": "DOWN", "binding:vif_type": "unbound", "security_groups": []any{"sg", "sg-old-policy", "sg-open-egress"},
				"fixed_ips": []neutrontest.Object{{"subnet_id": e.subnet, "ip_address": "10.10.0.7"}},
				"tags":      []string{names.ClusterTag("c1"), names.PodTag("uid-1")},
			})
			e.start(t)
		}
		p, _ := e.r.Ledger.Lookup("uid-1")
		src.groups, src.notReady = []string{"sg-open-egress"}, true // the policy re-created: ingress isolated, nothing admitted yet
		res, err := e.reconcileResult(t, "web")
		if err != nil || res.RequeueAfter != time.Second {
			t.Fatalf("plugged %v: %v %+v, want a requeue in a second", plugged, err, res)
		}
		if got := portGroups(t, e, p.ID); !slices.Equal(got, []string{"sg", "sg-open-egress"}) {
			t.Errorf("plugged %v: port groups %v, want the base and open egress only", plugged, got)
		}
	}
}

// TestAdoptedKeepsItsGroups: a port adopted from the original kuryr
// (tagged so by kubectl kuryr migrate prepare) whose KuryrPort kuryr has
// not completed keeps the groups it carries while the pod's groups are not
// ready (they enforce the original's policies), and gets kuryr's once they
// are. A port of kuryr's own in use the same way (ACTIVE: a nested
// subport, or a pooled port listed ACTIVE) still fails closed: the group
// of a policy going away comes off it.
func TestAdoptedKeepsItsGroups(t *testing.T) {
	for _, adopted := range []bool{true, false} {
		e := newEnv(t, kp("web", "uid-1"))
		src := &switchable{groups: []string{"sg-policy"}, notReady: true}
		e.r.Groups, e.r.GroupPorts = src, e.r.Neutron.(*neutron.Client)
		tags, carried := []string{names.ClusterTag("c1"), names.PodTag("uid-1")}, []any{"sg", "sg-old-policy", "sg-open-egress"}
		if adopted {
			tags, carried = append(tags, names.AdoptedTag), []any{"sg-original"}
		}
		id := e.fake.Add("ports", neutrontest.Object{
			"network_id": e.fake.Get("subnets", e.subnet)["network_id"], "mac_address": "fa:16:3e:00:00:01",
			"status": "ACTIVE", "binding:vif_type": "ovs", "binding:host_id": "node-1", "security_groups": carried,
			"fixed_ips":  []neutrontest.Object{{"subnet_id": e.subnet, "ip_address": "10.10.0.7"}},
			"created_at": time.Now().Add(-time.Hour).UTC().Format(time.RFC3339), "tags": tags,
		})
		e.start(t)
		src.groups = []string{"sg-open-egress"} // the policy re-created: nothing admitted yet
		if _, err := e.reconcileResult(t, "web"); err != nil {
			t.Fatal(err)
		}
		want := []string{"sg", "sg-open-egress"}
		if adopted {
			want = []string{"sg-original"}
		}
		if got := portGroups(t, e, id); !slices.Equal(got, want) {
			t.Errorf("adopted %v, while the pod's groups are not ready: %v, want %v", adopted, got, want)
		}
		src.groups, src.notReady = []string{"sg-policy"}, false
		if err := e.reconcile(t, "web"); err != nil {
			t.Fatal(err)
		}
		if got := portGroups(t, e, id); !slices.Equal(got, []string{"sg", "sg-policy"}) {
			t.Errorf("adopted %v, once ready: %v, want the base and the policy's", adopted, got)
		}
	}
}
