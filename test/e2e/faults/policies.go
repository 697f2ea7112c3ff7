//go:build e2e

package faults

import (
	"context"
	"fmt"
	"math/rand"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kuryrv1 "github.com/kuryr-k8s/kuryr/api/v1"
	"github.com/kuryr-k8s/kuryr/pkg/controller/policy"
	"github.com/kuryr-k8s/kuryr/pkg/names"
	"github.com/kuryr-k8s/kuryr/pkg/neutron"
	"github.com/kuryr-k8s/kuryr/test/e2e/framework"
)

// roles are the labels policy churn gives pods; policies select and admit
// pods by them.
var roles = []string{"web", "api", "db"}

// churnPolicies runs between waves: it creates a policy, rewrites an older
// one, deletes the one before that, and relabels a few pods of the
// namespace, so that policy groups, peer groups and pods' groups all
// change while the campaign runs.
func churnPolicies(t *testing.T, c *framework.Cloud, ns string, wave int) {
	t.Helper()
	ctx := context.Background()
	nps := c.Kube.NetworkingV1().NetworkPolicies(ns)
	if _, err := nps.Create(ctx, churnPolicy(ns, wave, 0), metav1.CreateOptions{}); err != nil {
		t.Fatalf("create policy: %v", err)
	}
	if wave >= 1 {
		old, err := nps.Get(ctx, policyName(wave-1), metav1.GetOptions{})
		if err == nil {
			old.Spec = churnPolicy(ns, wave-1, 1).Spec
			_, err = nps.Update(ctx, old, metav1.UpdateOptions{})
		}
		if err != nil {
			t.Fatalf("update policy: %v", err)
		}
	}
	if wave >= 2 {
		if err := nps.Delete(ctx, policyName(wave-2), metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Fatalf("delete policy: %v", err)
		}
	}
	pods, err := c.Kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("list pods: %v", err)
	}
	for i := 0; i < 8 && len(pods.Items) > 0; i++ {
		p := pods.Items[rand.Intn(len(pods.Items))]
		patch := fmt.Sprintf(`{"metadata":{"labels":{"role":%q}}}`, roles[rand.Intn(len(roles))])
		_, err := c.Kube.CoreV1().Pods(ns).Patch(ctx, p.Name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Fatalf("relabel %s: %v", p.Name, err)
		}
	}
}

func policyName(wave int) string { return fmt.Sprintf("churn-%d", wave) }

// churnPolicy: pods of one role admit another role on 8080 and, every
// other version, may reach only a third role.
func churnPolicy(ns string, wave, version int) *networkingv1.NetworkPolicy {
	role := func(i int) map[string]string { return map[string]string{"role": roles[(wave+version+i)%len(roles)]} }
	port := func(n int32) []networkingv1.NetworkPolicyPort {
		p := intstr.FromInt32(n)
		return []networkingv1.NetworkPolicyPort{{Port: &p}}
	}
	np := &networkingv1.NetworkPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: policyName(wave), Namespace: ns},
		Spec: networkingv1.NetworkPolicySpec{
			PodSelector: metav1.LabelSelector{MatchLabels: role(0)},
			Ingress: []networkingv1.NetworkPolicyIngressRule{{
				From:  []networkingv1.NetworkPolicyPeer{{PodSelector: &metav1.LabelSelector{MatchLabels: role(1)}}},
				Ports: port(8080),
			}},
		},
	}
	if version%2 == 1 {
		np.Spec.PolicyTypes = []networkingv1.PolicyType{networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress}
		np.Spec.Egress = []networkingv1.NetworkPolicyEgressRule{{
			To: []networkingv1.NetworkPolicyPeer{{NamespaceSelector: &metav1.LabelSelector{}, PodSelector: &metav1.LabelSelector{MatchLabels: role(2)}}},
		}}
	}
	return np
}

// checkPolicyGroups: every live pod's port carries exactly the groups its
// policies give it (pod_security_groups, the groups of the policies that
// select it, the open group of each direction none isolates, the groups
// of the peers it is one of), and no policy or peer group exists in
// Neutron without a live policy naming it.
func checkPolicyGroups(t *testing.T, c *framework.Cloud, k *framework.Kuryr, live []*corev1.Pod, byID map[string]neutron.Port, kps []kuryrv1.KuryrPort) error {
	ctx := context.Background()
	var nps networkingv1.NetworkPolicyList
	var knps kuryrv1.KuryrNetworkPolicyList
	if err := k.List(ctx, &nps); err != nil {
		return err
	}
	if err := k.List(ctx, &knps); err != nil {
		return err
	}
	open, err := openGroups(ctx, c, k.Cluster)
	if err != nil {
		return err
	}
	for _, pod := range live {
		want, err := wantGroups(ctx, k, pod, nps.Items, knps.Items, open, c.PodSG)
		if err != nil {
			return err
		}
		have := portGroups(pod, kps, byID)
		slices.Sort(have)
		if !slices.Equal(have, want) {
			return fmt.Errorf("pod %s (labels %v): port groups %v, want %v", pod.Name, pod.Labels, have, want)
		}
	}
	if err := checkPeerAddresses(ctx, c, k, knps.Items, kps); err != nil {
		return err
	}
	return orphanPolicyGroups(ctx, c, k.Cluster, nps.Items, knps.Items)
}

// checkPeerAddresses: every address-group peer of a policy holds exactly
// the addresses of the pods' ports it matches, and no peer address
// group of the cluster is left without a live policy naming its peer.
func checkPeerAddresses(ctx context.Context, c *framework.Cloud, k *framework.Kuryr, knps []kuryrv1.KuryrNetworkPolicy,
	kps []kuryrv1.KuryrPort) error {
	nc := neutron.New(c.OS.Network)
	named := map[string]bool{}
	for _, knp := range knps {
		for _, pp := range knp.Spec.Peers {
			named[pp.Key] = true
		}
		for key, id := range knp.Status.PeerAddressGroups {
			want, named, err := peerAddresses(ctx, k, kps, knp, key)
			if err != nil {
				return err
			}
			if !named {
				continue // a peer being released
			}
			ag, err := nc.GetAddressGroup(ctx, id)
			if err != nil {
				return err
			}
			have := slices.Sorted(slices.Values(ag.Addresses))
			if !slices.Equal(have, want) {
				return fmt.Errorf("policy %s/%s: peer %s address group %s holds %v, want %v", knp.Namespace, knp.Name, key, id, have, want)
			}
		}
	}
	ags, err := nc.ListAddressGroups(ctx, "")
	if err != nil {
		return err
	}
	for _, ag := range ags {
		key, ok := strings.CutPrefix(ag.Name, names.PeerGroupPrefix)
		if ok && ag.Description == names.PeerAddressGroupDescription(k.Cluster) && !named[key] {
			return fmt.Errorf("address group %s (%s) left without a policy naming its peer", ag.ID, ag.Name)
		}
	}
	return nil
}

// peerAddresses are the addresses of the KuryrPorts whose pods a policy's
// peer matches, as address groups hold them.
func peerAddresses(ctx context.Context, k *framework.Kuryr, kps []kuryrv1.KuryrPort,
	knp kuryrv1.KuryrNetworkPolicy, key string) (addresses []string, named bool, err error) {
	i := slices.IndexFunc(knp.Spec.Peers, func(pp kuryrv1.PolicyPeer) bool { return pp.Key == key })
	if i < 0 {
		return nil, false, nil
	}
	pp := knp.Spec.Peers[i]
	peer := policy.Peer{Namespace: pp.Namespace, Namespaces: pp.NamespaceSelector, Pods: pp.PodSelector}
	var out []string
	for j := range kps {
		kp := &kps[j]
		if !kp.DeletionTimestamp.IsZero() {
			continue
		}
		p := policy.Pod{Namespace: kp.Namespace}
		var pod corev1.Pod
		if err := k.Get(ctx, types.NamespacedName{Namespace: kp.Namespace, Name: kp.Name}, &pod); err == nil && string(pod.UID) == kp.Spec.PodUID {
			p.Labels = pod.Labels
		}
		var ns corev1.Namespace
		if err := k.Get(ctx, types.NamespacedName{Name: kp.Namespace}, &ns); err != nil {
			return nil, true, err
		}
		if peer.Matches(p, ns.Labels) {
			out = append(out, policy.PortAddresses(kp)...)
		}
	}
	slices.Sort(out)
	return slices.Compact(out), true, nil
}

func wantGroups(ctx context.Context, k *framework.Kuryr, pod *corev1.Pod, nps []networkingv1.NetworkPolicy,
	knps []kuryrv1.KuryrNetworkPolicy, open [2]string, base string) ([]string, error) {
	var fresh corev1.Pod
	if err := k.Get(ctx, client.ObjectKeyFromObject(pod), &fresh); err != nil {
		return nil, err
	}
	var ns corev1.Namespace
	if err := k.Get(ctx, types.NamespacedName{Name: pod.Namespace}, &ns); err != nil {
		return nil, err
	}
	p := policy.Pod{Namespace: fresh.Namespace, Labels: fresh.Labels}
	var selecting []*networkingv1.NetworkPolicy
	for i := range nps {
		selecting = append(selecting, &nps[i])
	}
	byName := map[string]string{}
	for _, knp := range knps {
		byName[knp.Namespace+"/"+knp.Name] = knp.Status.SecurityGroupID
	}
	groups, err := policy.Groups(p, selecting, func(np *networkingv1.NetworkPolicy) string {
		return byName[np.Namespace+"/"+np.Name]
	}, open[0], open[1])
	if err != nil {
		return nil, err
	}
	want := append(groups, base)
	want = append(want, policy.PeerGroupsOf(p, ns.Labels, knps)...)
	slices.Sort(want)
	return slices.Compact(want), nil
}

func portGroups(pod *corev1.Pod, kps []kuryrv1.KuryrPort, byID map[string]neutron.Port) []string {
	for _, kp := range kps {
		if kp.Spec.PodUID == string(pod.UID) {
			v, _ := kp.Status.DefaultVIF()
			return slices.Clone(byID[v.PortID].SecurityGroups)
		}
	}
	return nil
}

func openGroups(ctx context.Context, c *framework.Cloud, cluster string) ([2]string, error) {
	var out [2]string
	for i, name := range []string{names.OpenIngress, names.OpenEgress} {
		sgs, err := neutron.New(c.OS.Network).FindSecurityGroups(ctx, []string{names.ClusterTag(cluster), names.PolicyTag(name)})
		if err != nil || len(sgs) != 1 {
			return out, fmt.Errorf("open group %s: %d found, %v", name, len(sgs), err)
		}
		out[i] = sgs[0].ID
	}
	return out, nil
}

// orphanPolicyGroups: a policy group whose policy is gone, or a peer
// group no live KuryrNetworkPolicy names.
func orphanPolicyGroups(ctx context.Context, c *framework.Cloud, cluster string, nps []networkingv1.NetworkPolicy, knps []kuryrv1.KuryrNetworkPolicy) error {
	uids, peers := map[string]bool{}, map[string]bool{}
	for _, np := range nps {
		uids[string(np.UID)] = true
	}
	for _, knp := range knps {
		for _, pp := range knp.Spec.Peers {
			peers[pp.Key] = true
		}
	}
	sgs, err := neutron.New(c.OS.Network).FindSecurityGroups(ctx, []string{names.ClusterTag(cluster)})
	if err != nil {
		return err
	}
	for _, sg := range sgs {
		uid, key := names.PolicyUIDOf(sg.Tags), names.PeerKeyOf(sg.Tags)
		if (uid != "" && !strings.HasPrefix(uid, names.OpenGroupPrefix) && !uids[uid]) || (key != "" && !peers[key]) {
			return fmt.Errorf("security group %s (%s) left without its policy", sg.ID, sg.Name)
		}
	}
	return nil
}
