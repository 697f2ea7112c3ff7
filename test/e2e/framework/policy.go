//go:build e2e

package framework

import (
	"context"
	"fmt"
	"io"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/containernetworking/plugins/pkg/ns"
	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/security/groups"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/security/rules"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kuryrv1 "github.com/kuryr-k8s/kuryr/api/v1"
	"github.com/kuryr-k8s/kuryr/pkg/names"
	"github.com/kuryr-k8s/kuryr/pkg/neutron"
)

// WaitPolicyReady waits until the KuryrNetworkPolicy of a NetworkPolicy is
// Ready for its current spec (when the condition records a generation),
// with a security group, and returns it.
func (k *Kuryr) WaitPolicyReady(t testing.TB, ns, name string, timeout time.Duration) *kuryrv1.KuryrNetworkPolicy {
	t.Helper()
	var knp kuryrv1.KuryrNetworkPolicy
	Eventually(t, timeout, 100*time.Millisecond, "KuryrNetworkPolicy "+ns+"/"+name+" Ready", func() (bool, error) {
		if err := k.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &knp); err != nil {
			return false, err
		}
		ready := meta.FindStatusCondition(knp.Status.Conditions, kuryrv1.ConditionReady)
		if ready == nil || ready.Status != metav1.ConditionTrue || knp.Status.SecurityGroupID == "" ||
			(ready.ObservedGeneration != 0 && ready.ObservedGeneration < knp.Generation) {
			return false, fmt.Errorf("generation %d, security group %q, Ready %+v", knp.Generation, knp.Status.SecurityGroupID, ready)
		}
		return true, nil
	})
	return &knp
}

// PolicySecurityGroups lists the security groups named after a policy.
func (c *Cloud) PolicySecurityGroups(t testing.TB, uid string) []groups.SecGroup {
	t.Helper()
	pages, err := groups.List(c.OS.Network, groups.ListOpts{Name: names.PolicyGroupName(uid)}).AllPages(context.Background())
	if err != nil {
		t.Fatalf("list security groups of policy %s: %v", uid, err)
	}
	sgs, err := groups.ExtractGroups(pages)
	if err != nil {
		t.Fatalf("decode security groups: %v", err)
	}
	return sgs
}

// PeerGroups returns the peer groups a KuryrNetworkPolicy's status
// records, by group id (the value is the peer key); none when it is gone.
func (k *Kuryr) PeerGroups(t testing.TB, ns, name string) map[string]string {
	t.Helper()
	var knp kuryrv1.KuryrNetworkPolicy
	err := k.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &knp)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		t.Fatalf("get KuryrNetworkPolicy %s/%s: %v", ns, name, err)
	}
	out := map[string]string{}
	for key, id := range knp.Status.PeerGroups {
		out[id] = key
	}
	for key, id := range knp.Status.PeerAddressGroups {
		out[AddressGroupMark+id] = key
	}
	return out
}

// AddressGroupMark prefixes an address group's id among the peer groups
// PeerGroups returns (where Neutron enforces address groups, peers are
// those).
const AddressGroupMark = "ag:"

// PeerGroupExists says whether Neutron still has a peer group (a security
// group, or an address group marked so).
func (c *Cloud) PeerGroupExists(t testing.TB, id string) bool {
	t.Helper()
	ag, ok := strings.CutPrefix(id, AddressGroupMark)
	if !ok {
		return c.SecurityGroupExists(t, id)
	}
	_, err := neutron.New(c.OS.Network).GetAddressGroup(context.Background(), ag)
	if neutron.IsNotFound(err) {
		return false
	}
	if err != nil {
		t.Fatalf("get address group %s: %v", ag, err)
	}
	return true
}

// PortInPeer says whether a port exists and is in a peer group: carries
// the security group, or has its addresses in the address group.
func (c *Cloud) PortInPeer(t testing.TB, port, group string) bool {
	t.Helper()
	ag, ok := strings.CutPrefix(group, AddressGroupMark)
	if !ok {
		sgs, exists := c.PortSecurityGroups(t, port)
		return exists && slices.Contains(sgs, group)
	}
	p, err := ports.Get(context.Background(), c.OS.Network, port).Extract()
	if gophercloud.ResponseCodeIs(err, 404) {
		return false
	}
	if err != nil {
		t.Fatalf("get port %s: %v", port, err)
	}
	g, err := neutron.New(c.OS.Network).GetAddressGroup(context.Background(), ag)
	if neutron.IsNotFound(err) {
		return false
	}
	if err != nil {
		t.Fatalf("get address group %s: %v", ag, err)
	}
	for _, ip := range p.FixedIPs {
		a, _ := neutron.HostPrefix(ip.IPAddress)
		if !slices.Contains(g.Addresses, a) {
			return false
		}
	}
	return len(p.FixedIPs) > 0
}

// LivePeerKeys are the peer keys the cluster's KuryrNetworkPolicies not
// being deleted name: their groups stay.
func (k *Kuryr) LivePeerKeys(t testing.TB) map[string]bool {
	t.Helper()
	var knps kuryrv1.KuryrNetworkPolicyList
	if err := k.List(context.Background(), &knps); err != nil {
		t.Fatalf("list KuryrNetworkPolicies: %v", err)
	}
	live := map[string]bool{}
	for _, knp := range knps.Items {
		if knp.DeletionTimestamp.IsZero() {
			for _, p := range knp.Spec.Peers {
				live[p.Key] = true
			}
		}
	}
	return live
}

// SecurityGroupExists reports whether Neutron holds the security group.
func (c *Cloud) SecurityGroupExists(t testing.TB, id string) bool {
	t.Helper()
	_, err := groups.Get(context.Background(), c.OS.Network, id).Extract()
	if gophercloud.ResponseCodeIs(err, 404) {
		return false
	}
	if err != nil {
		t.Fatalf("get security group %s: %v", id, err)
	}
	return true
}

// WaitPolicyObjectsGone waits until Neutron holds no security group of the
// policies with these UIDs and none of the peer groups (id -> peer key)
// the test saw them use, but those whose peer a live KuryrNetworkPolicy
// still names, and returns how long that took.
func (c *Cloud) WaitPolicyObjectsGone(t testing.TB, k *Kuryr, timeout time.Duration, uids []string, peerGroups map[string]string) time.Duration {
	t.Helper()
	start := time.Now()
	what := fmt.Sprintf("Neutron groups of %d policies and %d peers gone", len(uids), len(peerGroups))
	Eventually(t, timeout, time.Second, what, func() (bool, error) {
		var left []string
		for _, uid := range uids {
			for _, g := range c.PolicySecurityGroups(t, uid) {
				left = append(left, "security group "+g.Name)
			}
		}
		live := k.LivePeerKeys(t)
		for id, key := range peerGroups {
			if !live[key] && c.PeerGroupExists(t, id) {
				left = append(left, "peer group "+names.PeerGroupName(key)+" ("+id+")")
			}
		}
		return len(left) == 0, fmt.Errorf("left: %s", strings.Join(left, ", "))
	})
	return time.Since(start)
}

// PodPortID is the Neutron port of a pod, as its KuryrPort records it.
func (k *Kuryr) PodPortID(t testing.TB, ns, name string) string {
	t.Helper()
	var kp kuryrv1.KuryrPort
	if err := k.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &kp); err != nil {
		t.Fatalf("get KuryrPort %s/%s: %v", ns, name, err)
	}
	vif, ok := kp.Status.DefaultVIF()
	if !ok {
		t.Fatalf("KuryrPort %s/%s names no port", ns, name)
	}
	return vif.PortID
}

// PortSecurityGroups returns a port's security groups; exists is false
// when the port is gone.
func (c *Cloud) PortSecurityGroups(t testing.TB, id string) (sgs []string, exists bool) {
	t.Helper()
	p, err := ports.Get(context.Background(), c.OS.Network, id).Extract()
	if gophercloud.ResponseCodeIs(err, 404) {
		return nil, false
	}
	if err != nil {
		t.Fatalf("get port %s: %v", id, err)
	}
	return p.SecurityGroups, true
}

// SecurityGroupRules lists the rules of a security group.
func (c *Cloud) SecurityGroupRules(t testing.TB, sg string) []rules.SecGroupRule {
	t.Helper()
	pages, err := rules.List(c.OS.Network, rules.ListOpts{SecGroupID: sg}).AllPages(context.Background())
	if err != nil {
		t.Fatalf("list rules of security group %s: %v", sg, err)
	}
	rs, err := rules.ExtractRules(pages)
	if err != nil {
		t.Fatalf("decode rules: %v", err)
	}
	return rs
}

// HTTPGet sends GET / (HTTP/1.0) from inside n to addr and returns the last
// line of the answer (the test image's HTTP server answers with the pod's
// name), within timeout.
func HTTPGet(n ns.NetNS, addr string, timeout time.Duration) (string, error) {
	var got string
	err := n.Do(func(ns.NetNS) error {
		c, err := net.DialTimeout("tcp", addr, timeout)
		if err != nil {
			return err
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(timeout))
		if _, err := c.Write([]byte("GET / HTTP/1.0\r\n\r\n")); err != nil {
			return err
		}
		raw, err := io.ReadAll(c)
		lines := strings.Split(strings.TrimSpace(string(raw)), "\n")
		got = strings.TrimSpace(lines[len(lines)-1])
		if got == "" {
			return fmt.Errorf("no answer from %s: %v", addr, err)
		}
		return nil
	})
	return got, err
}
