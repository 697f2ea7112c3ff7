//go:build e2e

// Package policy tests NetworkPolicy enforced by Neutron security groups on
// the local cloud: traffic between pods, across nodes and namespaces, is
// answered or not as the policies say, follows changes to policies, pods
// and namespaces without restarts, and every policy's security group is
// gone from Neutron once the policy is, as is every peer group (the
// security group whose member ports are a peer's pods) no policy names.
//
// Each test builds one fixture (a few namespaces, a few pods on both nodes)
// and runs its cases as subtests on it; the policies of a case are deleted
// when it ends, and the case after it starts from everything answering.
package policy

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/kuryr-k8s/kuryr/test/e2e/framework"
)

// What every test pod serves: HTTP (answering its name) on 8080 ("web"),
// 8081, 8082 ("alt") and 8090, and UDP on 9090 ("echo").
const (
	portWeb   = 8080
	port8081  = 8081
	portAlt   = 8082
	port8090  = 8090
	portEcho  = 9090
	serveCmd  = `hostname >/www/index.html; for p in 8081 8082 8090; do httpd -p $p -h /www; done; testapp udp-serve 9090 & exec /bin/serve`
	podsReady = 3 * time.Minute
	nsGone    = 3 * time.Minute
	// neutronGone bounds how long a deleted policy's Neutron objects may stay.
	neutronGone = 60 * time.Second
)

// podSpec is a pod of a fixture: its short name (unique in the fixture),
// the short name of its namespace, the index of its node, its labels.
// Servers are what the clients reach when no policy is in the way.
type podSpec struct {
	name, ns string
	node     int
	labels   map[string]string
	server   bool
}

// fixture is a test's namespaces and pods, and the policies it created.
type fixture struct {
	c        *framework.Cloud
	k        *framework.Kuryr
	base     string
	mu       sync.Mutex
	nss      map[string]string      // short name -> namespace
	pods     map[string]*corev1.Pod // short name -> pod, as Ready
	servers  []string               // short names
	clients  []string               // short names
	policies []string               // UIDs of every policy created
	// peerGroups are the peer groups the policies were seen to use: group
	// id -> peer key.
	peerGroups map[string]string
}

// newFixture creates the namespaces (short name -> labels) and pods, waits
// until the pods are Ready and deletes everything at cleanup, then checks
// that no Neutron object of the test's policies is left.
func newFixture(t *testing.T, prefix string, namespaces map[string]map[string]string, pods ...podSpec) *fixture {
	t.Helper()
	c := framework.Connect(t)
	f := &fixture{c: c, k: c.ConnectKuryr(t), base: framework.Name(prefix), nss: map[string]string{},
		pods: map[string]*corev1.Pod{}, peerGroups: map[string]string{}}
	// Cleanups run last first: namespaces go, then Neutron is checked.
	t.Cleanup(func() { f.checkNeutronClean(t) })
	t.Cleanup(func() { f.deleteNamespaces(t) })
	for short, nsLabels := range namespaces {
		f.addNamespace(t, short, nsLabels)
	}
	f.addPods(t, pods...)
	return f
}

func (f *fixture) addNamespace(t *testing.T, short string, labels map[string]string) string {
	t.Helper()
	name := f.base + "-" + short
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
	if _, err := f.c.Kube.CoreV1().Namespaces().Create(context.Background(), ns, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create namespace %s: %v", name, err)
	}
	f.mu.Lock()
	f.nss[short] = name
	f.mu.Unlock()
	return name
}

// deleteNamespaces deletes every namespace at once and waits for them all.
func (f *fixture) deleteNamespaces(t *testing.T) {
	ctx := context.Background()
	for _, ns := range f.nss {
		f.notePeerGroupsIn(t, ns)
		if err := f.c.Kube.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("delete namespace %s: %v", ns, err)
		}
	}
	for _, ns := range f.nss {
		framework.Eventually(t, nsGone, 500*time.Millisecond, "namespace "+ns+" gone", func() (bool, error) {
			_, err := f.c.Kube.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
			return apierrors.IsNotFound(err), err
		})
	}
}

func (f *fixture) checkNeutronClean(t *testing.T) {
	if len(f.policies) == 0 {
		return
	}
	d := f.c.WaitPolicyObjectsGone(t, f.k, neutronGone, f.policies, f.peerGroups)
	t.Logf("no security group of the %d policies nor any of their %d peer groups left, %s after the namespaces were gone",
		len(f.policies), len(f.peerGroups), fmtDur(d))
}

// notePeerGroups records the peer groups a policy's KuryrNetworkPolicy
// names now, for the check that they are gone in the end.
func (f *fixture) notePeerGroups(t testing.TB, ns, name string) {
	t.Helper()
	groups := f.k.PeerGroups(t, ns, name)
	f.mu.Lock()
	defer f.mu.Unlock()
	maps.Copy(f.peerGroups, groups)
}

// notePeerGroupsIn records the peer groups of every policy of a namespace.
func (f *fixture) notePeerGroupsIn(t testing.TB, ns string) {
	t.Helper()
	list, err := f.c.Kube.NetworkingV1().NetworkPolicies(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Errorf("list NetworkPolicies in %s: %v", ns, err)
		return
	}
	for _, np := range list.Items {
		f.notePeerGroups(t, ns, np.Name)
	}
}

// testPod is a pod of the test image serving every port above, Ready by
// an HTTP probe the kubelet sends from the node, labelled pod=<short name>
// besides its own labels.
func (f *fixture) testPod(s podSpec) *corev1.Pod {
	p := f.c.TestPod(f.nss[s.ns], s.name, f.c.Nodes[s.node%len(f.c.Nodes)])
	maps.Copy(p.Labels, s.labels)
	p.Labels["pod"] = s.name
	ct := &p.Spec.Containers[0]
	ct.Command = []string{"sh", "-c", serveCmd}
	ct.Ports = []corev1.ContainerPort{{Name: "web", ContainerPort: portWeb}, {Name: "alt", ContainerPort: portAlt},
		{Name: "echo", ContainerPort: portEcho, Protocol: corev1.ProtocolUDP}}
	ct.ReadinessProbe.ProbeHandler = corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromString("web")}}
	ct.ReadinessProbe.PeriodSeconds = 1
	return p
}

// addPods creates pods at once and waits until they are all Ready.
func (f *fixture) addPods(t *testing.T, specs ...podSpec) {
	t.Helper()
	start := time.Now()
	created := make([]*corev1.Pod, 0, len(specs))
	for _, s := range specs {
		p, err := f.c.Kube.CoreV1().Pods(f.nss[s.ns]).Create(context.Background(), f.testPod(s), metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("create pod %s: %v", s.name, err)
		}
		created = append(created, p)
	}
	ready := f.c.WaitReady(t, created, podsReady)
	f.mu.Lock()
	defer f.mu.Unlock()
	for i, s := range specs {
		f.pods[s.name] = ready[i]
		if s.server {
			f.servers = append(f.servers, s.name)
		} else {
			f.clients = append(f.clients, s.name)
		}
	}
	t.Logf("%d pods Ready in %s", len(specs), time.Since(start).Round(time.Millisecond))
}

// deletePod deletes a pod and waits until it is gone.
func (f *fixture) deletePod(t *testing.T, short string) {
	t.Helper()
	p := f.pod(t, short)
	ctx := context.Background()
	if err := f.c.Kube.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete pod %s: %v", p.Name, err)
	}
	framework.Eventually(t, time.Minute, 250*time.Millisecond, "pod "+p.Name+" gone", func() (bool, error) {
		_, err := f.c.Kube.CoreV1().Pods(p.Namespace).Get(ctx, p.Name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), err
	})
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.pods, short)
	f.servers = without(f.servers, short)
	f.clients = without(f.clients, short)
}

func without(list []string, s string) []string {
	out := make([]string, 0, len(list))
	for _, x := range list {
		if x != s {
			out = append(out, x)
		}
	}
	return out
}

func (f *fixture) pod(t testing.TB, short string) *corev1.Pod {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	p, ok := f.pods[short]
	if !ok {
		t.Fatalf("no pod %q in the fixture", short)
	}
	return p
}

func (f *fixture) ns(short string) string { return f.nss[short] }

// labelPatch sets (or, for "", removes) labels with a merge patch.
func labelPatch(kv map[string]string) []byte {
	labels := map[string]any{}
	for k, v := range kv {
		if v == "" {
			labels[k] = nil
		} else {
			labels[k] = v
		}
	}
	raw, _ := json.Marshal(map[string]any{"metadata": map[string]any{"labels": labels}})
	return raw
}

// labelPod changes a pod's labels ("" removes one) and returns when.
func (f *fixture) labelPod(t *testing.T, short string, kv map[string]string) time.Time {
	t.Helper()
	p := f.pod(t, short)
	now := time.Now()
	got, err := f.c.Kube.CoreV1().Pods(p.Namespace).Patch(context.Background(), p.Name, types.MergePatchType,
		labelPatch(kv), metav1.PatchOptions{})
	if err != nil {
		t.Fatalf("label pod %s: %v", p.Name, err)
	}
	f.mu.Lock()
	f.pods[short] = got
	f.mu.Unlock()
	return now
}

// labelNamespace changes a namespace's labels ("" removes one) and
// returns when.
func (f *fixture) labelNamespace(t *testing.T, short string, kv map[string]string) time.Time {
	t.Helper()
	now := time.Now()
	if _, err := f.c.Kube.CoreV1().Namespaces().Patch(context.Background(), f.ns(short), types.MergePatchType,
		labelPatch(kv), metav1.PatchOptions{}); err != nil {
		t.Fatalf("label namespace %s: %v", f.ns(short), err)
	}
	return now
}

// run runs a case as a subtest; its policies are deleted when it ends, and
// every client answers from every server again before the next one.
func (f *fixture) run(t *testing.T, name string, fn func(t *testing.T)) {
	t.Helper()
	t.Run(name, func(t *testing.T) {
		t.Cleanup(func() { f.reset(t) })
		// Registered last, so it runs first: the state that failed.
		t.Cleanup(func() {
			if t.Failed() {
				f.c.LogPolicyState(t, f.k, slices.Collect(maps.Values(f.nss))...)
			}
		})
		fn(t)
	})
}

func fmtDur(d time.Duration) string { return d.Round(10 * time.Millisecond).String() }

func labels(kv ...string) map[string]string {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return m
}

func describe(p *corev1.Pod) string { return fmt.Sprintf("%s/%s", p.Namespace, p.Name) }
