//go:build e2e

package framework

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kuryrv1 "github.com/kuryr-k8s/kuryr/api/v1"
)

// LogPolicyState logs, for a failed test, what kuryr and Neutron hold for
// the namespaces: each KuryrNetworkPolicy's group, peers and Ready
// condition, and each KuryrPort's groups beside those its Neutron port
// carries (and the port's status). It reports, never fails.
func (c *Cloud) LogPolicyState(t testing.TB, k *Kuryr, namespaces ...string) {
	t.Helper()
	// Whatever is failing may be what answers: bounded.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	namespaces = slices.Sorted(slices.Values(namespaces))
	for _, ns := range namespaces {
		var knps kuryrv1.KuryrNetworkPolicyList
		if err := k.List(ctx, &knps, client.InNamespace(ns)); err != nil {
			t.Logf("state: list KuryrNetworkPolicies in %s: %v", ns, err)
		}
		for _, knp := range knps.Items {
			t.Logf("state: knp %s/%s group %s peers %v %s", ns, knp.Name, knp.Status.SecurityGroupID,
				knp.Status.PeerGroups, conditionText(knp.Status.Conditions))
		}
		var kps kuryrv1.KuryrPortList
		if err := k.List(ctx, &kps, client.InNamespace(ns)); err != nil {
			t.Logf("state: list KuryrPorts in %s: %v", ns, err)
		}
		for _, kp := range kps.Items {
			t.Logf("state: kuryrport %s/%s groups %v applied %t %s; %s", ns, kp.Name, kp.Status.SecurityGroups,
				kp.Status.SecurityGroupsApplied, conditionText(kp.Status.Conditions), c.portState(ctx, kp.Status))
		}
	}
}

func (c *Cloud) portState(ctx context.Context, s kuryrv1.KuryrPortStatus) string {
	vif, ok := s.DefaultVIF()
	if !ok {
		return "no port yet"
	}
	p, err := ports.Get(ctx, c.OS.Network, vif.PortID).Extract()
	if err != nil {
		return fmt.Sprintf("port %s: %v", vif.PortID, err)
	}
	sgs := slices.Clone(p.SecurityGroups)
	slices.Sort(sgs)
	return fmt.Sprintf("port %s %s %v groups %v", p.ID, p.Status, p.FixedIPs, sgs)
}

func conditionText(cs []metav1.Condition) string {
	r := meta.FindStatusCondition(cs, kuryrv1.ConditionReady)
	if r == nil {
		return "Ready unset"
	}
	return strings.TrimSpace(fmt.Sprintf("Ready=%s %s %s", r.Status, r.Reason, r.Message))
}
