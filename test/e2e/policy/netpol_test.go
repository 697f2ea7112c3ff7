//go:build e2e

package policy

import (
	"context"
	"testing"
	"time"

	"github.com/kuryr-k8s/kuryr/pkg/names"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/util/retry"
)

// policyReady bounds how long a new policy's KuryrNetworkPolicy may take
// to be Ready.
const policyReady = 30 * time.Second

var (
	ingressOnly = []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}
	egressOnly  = []networkingv1.PolicyType{networkingv1.PolicyTypeEgress}
)

// netpol is a NetworkPolicy selecting the pods labelled kv (every pod of
// the namespace for none) with the policy types given (none: implicit).
func netpol(ns, name string, types []networkingv1.PolicyType, kv ...string) *networkingv1.NetworkPolicy {
	return &networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: networkingv1.NetworkPolicySpec{PodSelector: *sel(kv...), PolicyTypes: types}}
}

// sel matches the labels kv; with none it matches everything.
func sel(kv ...string) *metav1.LabelSelector {
	if len(kv) == 0 {
		return &metav1.LabelSelector{}
	}
	return &metav1.LabelSelector{MatchLabels: labels(kv...)}
}

func podPeer(kv ...string) networkingv1.NetworkPolicyPeer {
	return networkingv1.NetworkPolicyPeer{PodSelector: sel(kv...)}
}

func nsPeer(kv ...string) networkingv1.NetworkPolicyPeer {
	return networkingv1.NetworkPolicyPeer{NamespaceSelector: sel(kv...)}
}

func ipPeer(cidr string, except ...string) networkingv1.NetworkPolicyPeer {
	return networkingv1.NetworkPolicyPeer{IPBlock: &networkingv1.IPBlock{CIDR: cidr, Except: except}}
}

// from and to are rules admitting the peers (anyone for none) on the ports
// (every port for none).
func from(ports []networkingv1.NetworkPolicyPort, peers ...networkingv1.NetworkPolicyPeer) networkingv1.NetworkPolicyIngressRule {
	return networkingv1.NetworkPolicyIngressRule{Ports: ports, From: peers}
}

func to(ports []networkingv1.NetworkPolicyPort, peers ...networkingv1.NetworkPolicyPeer) networkingv1.NetworkPolicyEgressRule {
	return networkingv1.NetworkPolicyEgressRule{Ports: ports, To: peers}
}

// port is a port by number (int) or by name (string) over TCP, or over
// proto when given.
func port(p any, proto ...corev1.Protocol) networkingv1.NetworkPolicyPort {
	var v intstr.IntOrString
	switch p := p.(type) {
	case int:
		v = intstr.FromInt32(int32(p))
	case string:
		v = intstr.FromString(p)
	default:
		panic("port: int or string")
	}
	np := networkingv1.NetworkPolicyPort{Port: &v}
	if len(proto) > 0 {
		np.Protocol = &proto[0]
	}
	return np
}

// portRange is the TCP ports lo to hi.
func portRange(lo, hi int32) networkingv1.NetworkPolicyPort {
	v := intstr.FromInt32(lo)
	return networkingv1.NetworkPolicyPort{Port: &v, EndPort: &hi}
}

func ports(ps ...networkingv1.NetworkPolicyPort) []networkingv1.NetworkPolicyPort { return ps }

// apply creates a policy, waits until its KuryrNetworkPolicy is Ready with
// the security group named after it, records its peer groups, and returns
// when it was created.
func (f *fixture) apply(t *testing.T, np *networkingv1.NetworkPolicy) time.Time {
	t.Helper()
	start := time.Now()
	got, err := f.c.Kube.NetworkingV1().NetworkPolicies(np.Namespace).Create(context.Background(), np, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create NetworkPolicy %s: %v", np.Name, err)
	}
	f.mu.Lock()
	f.policies = append(f.policies, string(got.UID))
	f.mu.Unlock()
	knp := f.k.WaitPolicyReady(t, np.Namespace, np.Name, policyReady)
	ready := time.Since(start)
	f.mu.Lock()
	for key, id := range knp.Status.PeerGroups {
		f.peerGroups[id] = key
	}
	f.mu.Unlock()
	sgs := f.c.PolicySecurityGroups(t, string(got.UID))
	if len(sgs) != 1 || sgs[0].ID != knp.Status.SecurityGroupID {
		t.Errorf("policy %s: KuryrNetworkPolicy names security group %s, Neutron has %d named %s: %+v", np.Name,
			knp.Status.SecurityGroupID, len(sgs), names.PolicyGroupName(string(got.UID)), sgs)
	}
	t.Logf("policy %s: KuryrNetworkPolicy Ready %s after creation", np.Name, fmtDur(ready))
	return start
}

// updatePolicy changes a policy's spec (its peer groups recorded first)
// and returns when.
func (f *fixture) updatePolicy(t *testing.T, ns, name string, mutate func(*networkingv1.NetworkPolicySpec)) time.Time {
	t.Helper()
	f.notePeerGroups(t, ns, name)
	api := f.c.Kube.NetworkingV1().NetworkPolicies(ns)
	var at time.Time
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur, err := api.Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		mutate(&cur.Spec)
		at = time.Now()
		_, err = api.Update(context.Background(), cur, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatalf("update NetworkPolicy %s: %v", name, err)
	}
	return at
}

// deletePolicy deletes a policy (its peer groups recorded first) and
// returns when.
func (f *fixture) deletePolicy(t *testing.T, ns, name string) time.Time {
	t.Helper()
	f.notePeerGroups(t, ns, name)
	at := time.Now()
	if err := f.c.Kube.NetworkingV1().NetworkPolicies(ns).Delete(context.Background(), name, metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete NetworkPolicy %s: %v", name, err)
	}
	return at
}

// reset deletes every policy of the fixture's namespaces and waits until
// every client is answered by every server again.
func (f *fixture) reset(t *testing.T) {
	t.Helper()
	at := time.Now()
	deleted := 0
	for _, ns := range f.nss {
		api := f.c.Kube.NetworkingV1().NetworkPolicies(ns)
		list, err := api.List(context.Background(), metav1.ListOptions{})
		if err != nil {
			t.Fatalf("list NetworkPolicies in %s: %v", ns, err)
		}
		for _, np := range list.Items {
			f.notePeerGroups(t, ns, np.Name)
			if err := api.Delete(context.Background(), np.Name, metav1.DeleteOptions{}); err != nil {
				t.Fatalf("delete NetworkPolicy %s/%s: %v", ns, np.Name, err)
			}
			deleted++
		}
	}
	if deleted == 0 {
		return
	}
	f.mu.Lock()
	clients, servers := append([]string(nil), f.clients...), append([]string(nil), f.servers...)
	f.mu.Unlock()
	var all []check
	for _, cl := range clients {
		for _, s := range servers {
			all = append(all, f.allow(t, cl, f.tcp(t, s, portWeb))...)
		}
	}
	// Answers are quick: one round that holds is enough.
	awaitRounds(t, at, "policies deleted: every client answered again", 0, all)
}
