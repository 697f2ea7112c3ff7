//go:build e2e

package policy

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	kuryrv1 "github.com/kuryr-k8s/kuryr/api/v1"
	"github.com/kuryr-k8s/kuryr/pkg/cli/doctor"
	"github.com/kuryr-k8s/kuryr/pkg/names"
	"github.com/kuryr-k8s/kuryr/pkg/neutron"
	"github.com/kuryr-k8s/kuryr/test/e2e/framework"
)

// TestAddressGroupProbe: a leader that has no recent answer probes the
// dataplane: on this cloud (Neutron 26 with ML2/OVN enforces a rule's
// remote address group) the answer is Enforced, recorded on the node it
// probed from, and the probe's port, security group and address group are
// gone afterwards; `kubectl kuryr doctor` says peers are address groups.
func TestAddressGroupProbe(t *testing.T) {
	c := framework.Connect(t)
	k := c.ConnectKuryr(t)
	ctx := context.Background()
	nodes, err := c.Kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	patch := []byte(`{"metadata":{"annotations":{"` + kuryrv1.AddressGroupProbeAnnotation + `":null}}}`)
	for _, n := range nodes.Items {
		if _, err := c.Kube.CoreV1().Nodes().Patch(ctx, n.Name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	start := time.Now()
	k.Controller(t, "restart")
	var got kuryrv1.AddressGroupProbe
	var from string
	framework.Eventually(t, 3*time.Minute, time.Second, "the probe's answer on a node", func() (bool, error) {
		nodes, err := c.Kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		for _, n := range nodes.Items {
			if json.Unmarshal([]byte(n.Annotations[kuryrv1.AddressGroupProbeAnnotation]), &got) == nil {
				from = n.Name
				return true, nil
			}
		}
		return false, nil
	})
	t.Logf("answer from node %s, %s after the restart: %+v", from, time.Since(start).Round(time.Second), got)
	if got.Verdict != kuryrv1.AddressGroupsEnforced || !got.AddressGroups {
		t.Errorf("verdict %s (%s), want Enforced on Neutron 26", got.Verdict, got.Detail)
	}
	checkProbeGone(t, c)
	var node corev1.Node
	if err := k.Get(ctx, types.NamespacedName{Name: from}, &node); err != nil {
		t.Fatal(err)
	}
	if _, ok := node.Annotations[kuryrv1.ProbePortAnnotation]; ok {
		t.Errorf("node %s still asked to plug the probe port", from)
	}
	peers := doctorFinding(t, "policy peers")
	if peers.Status != doctor.OK || !strings.Contains(peers.Message, "peers are address groups") {
		t.Errorf("doctor: %s %s", peers.Status, peers.Message)
	}
	t.Logf("doctor: %s", peers.Message)
}

// checkProbeGone: Neutron holds no port, security group or address group
// of the probe.
func checkProbeGone(t *testing.T, c *framework.Cloud) {
	t.Helper()
	nc := neutron.New(c.OS.Network)
	ctx := context.Background()
	tags := []string{names.AddressGroupProbeTag}
	ports, err := nc.ListPorts(ctx, tags, "")
	if err != nil {
		t.Fatal(err)
	}
	sgs, err := nc.FindSecurityGroups(ctx, tags)
	if err != nil {
		t.Fatal(err)
	}
	ags, err := nc.AddressGroupsNamed(ctx, names.AddressGroupProbeName)
	if err != nil {
		t.Fatal(err)
	}
	if len(ports)+len(sgs)+len(ags) > 0 {
		t.Errorf("the probe left %d ports, %d security groups, %d address groups", len(ports), len(sgs), len(ags))
	}
}

// doctorFinding runs `kubectl kuryr doctor -o json` as a user would (the
// plugin built from this tree) and returns the finding of a check.
func doctorFinding(t *testing.T, check string) doctor.Finding {
	t.Helper()
	out, err := exec.Command(framework.Plugin(t), "doctor", "-o", "json").Output()
	var findings []doctor.Finding
	if jerr := json.Unmarshal(out, &findings); jerr != nil {
		t.Fatalf("doctor: %v / %v: %s", err, jerr, out)
	}
	for _, f := range findings {
		if f.Check == check {
			return f
		}
	}
	t.Fatalf("doctor has no %q finding: %s", check, out)
	return doctor.Finding{}
}

// TestPeersMoveBetweenKinds: a policy applied with address-group peers
// moves to remote security groups when the controller is restarted with
// [network_policy] address_groups = false, and back when it is restarted
// without it; each time the old peer group is deleted, and the policy
// keeps admitting its peer and nothing else.
func TestPeersMoveBetweenKinds(t *testing.T) {
	f := newFixture(t, "np-kinds", map[string]map[string]string{"a": nil},
		podSpec{name: "srv-0", ns: "a", node: 0, labels: labels("role", "server"), server: true},
		podSpec{name: "cl-0", ns: "a", node: 1, labels: labels("role", "client")},
		podSpec{name: "cl-1", ns: "a", node: 0},
	)
	web := f.tcp(t, "srv-0", portWeb)
	np := netpol(f.ns("a"), "clients", ingressOnly, "role", "server")
	np.Spec.Ingress = append(np.Spec.Ingress, from(ports(port(portWeb)), podPeer("role", "client")))
	since := f.apply(t, np)
	holds := func(what string, since time.Time) {
		t.Helper()
		await(t, since, what+": cl-0 admitted, cl-1 not", join(f.allow(t, "cl-0", web), f.deny(t, "cl-1", web))...)
	}
	holds("address groups", since)
	ag := f.onlyPeerGroup(t, f.ns("a"), "clients")
	if !strings.HasPrefix(ag, framework.AddressGroupMark) {
		t.Fatalf("peer group %s: want an address group on this cloud", ag)
	}

	t.Cleanup(func() { f.k.Controller(t, "restart") })
	f.k.Controller(t, "restart", "--set", "network_policy.address_groups=false")
	start := time.Now()
	sg := f.waitPeerKind(t, false)
	t.Logf("peers are security groups %s after the restart", fmtDur(time.Since(start)))
	holds("security groups", time.Now())
	f.waitPeerGroupGone(t, ag)

	f.k.Controller(t, "restart")
	start = time.Now()
	f.waitPeerKind(t, true)
	t.Logf("peers are address groups again %s after the restart", fmtDur(time.Since(start)))
	holds("address groups again", time.Now())
	f.waitPeerGroupGone(t, sg)
	f.notePeerGroups(t, f.ns("a"), "clients")
}

// waitPeerKind waits until the policy "clients" of namespace a has one
// peer group of the kind and returns it.
func (f *fixture) waitPeerKind(t *testing.T, addressGroups bool) string {
	t.Helper()
	var group string
	framework.Eventually(t, 4*time.Minute, 500*time.Millisecond, "the peer group of the other kind", func() (bool, error) {
		groups := f.k.PeerGroups(t, f.ns("a"), "clients")
		for id := range groups {
			group = id
		}
		return len(groups) == 1 && strings.HasPrefix(group, framework.AddressGroupMark) == addressGroups, fmt.Errorf("peer groups %v", groups)
	})
	return group
}

func (f *fixture) waitPeerGroupGone(t *testing.T, group string) {
	t.Helper()
	framework.Eventually(t, time.Minute, time.Second, "the old peer group "+group+" deleted", func() (bool, error) {
		return !f.c.PeerGroupExists(t, group), nil
	})
}
