//go:build e2e

package framework

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kuryrv1 "github.com/kuryr-k8s/kuryr/api/v1"
	"github.com/kuryr-k8s/kuryr/pkg/names"
	"github.com/kuryr-k8s/kuryr/pkg/neutron"
)

// Kuryr is a client for kuryr's resources and its local-cloud processes.
type Kuryr struct {
	client.Client
	Cluster string
	ctl     string
}

// CtlPath is the local cloud's control script (kuryr-ctl.sh).
func CtlPath(t testing.TB) string { return mustEnv(t, "KURYR_CTL") }

// ConnectKuryr builds a client that knows kuryr's CRDs.
func (c *Cloud) ConnectKuryr(t testing.TB) *Kuryr {
	t.Helper()
	cl, err := c.KuryrClient(100, 200)
	if err != nil {
		t.Fatal(err)
	}
	return &Kuryr{Client: cl, Cluster: mustEnv(t, "KURYR_CLUSTER"), ctl: mustEnv(t, "KURYR_CTL")}
}

// Controller runs `kuryr-ctl.sh controller ACTION ARGS...` (start, stop,
// kill, restart with extra controller flags): the controller Deployment's
// args, rolled out, waiting for a ready leader.
func (k *Kuryr) Controller(t testing.TB, action string, args ...string) {
	t.Helper()
	out, err := exec.Command("bash", append([]string{k.ctl, "controller", action}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("controller %s %v: %v: %s", action, args, err, out)
	}
}

// Ctl runs `kuryr-ctl.sh ARGS...` and returns its output: the local
// cloud's controls, e.g. sql and nbctl for a test that leaves a service in
// a state its API cannot.
func (k *Kuryr) Ctl(t testing.TB, args ...string) string {
	t.Helper()
	out, err := exec.Command("bash", append([]string{k.ctl}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("kuryr-ctl.sh %v: %v: %s", args, err, out)
	}
	return string(out)
}

// RestartDaemons rolls the kuryr-daemon DaemonSet (`kuryr-ctl.sh daemons
// restart`) and waits until every node's new daemon is Ready.
func (k *Kuryr) RestartDaemons(t testing.TB) {
	t.Helper()
	out, err := exec.Command("bash", k.ctl, "daemons", "restart").CombinedOutput()
	if err != nil {
		t.Fatalf("daemons restart: %v: %s", err, out)
	}
}

// Crash kills a process of the local cloud (SIGKILL, or the signal given)
// as a crash would: "kuryr-controller" (the leader's container),
// "NODE-kuryr-daemon", or a supervised process; the kubelet or the
// supervisor restarts it.
func (k *Kuryr) Crash(t testing.TB, name string, signal ...string) {
	t.Helper()
	out, err := exec.Command("bash", append([]string{k.ctl, "crash", name}, signal...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("crash %s: %v: %s", name, err, out)
	}
}

// UseSubnetDriver restarts the controller with pod_subnets_driver = driver,
// and back to the configured default when the test ends.
func (k *Kuryr) UseSubnetDriver(t testing.TB, driver string) {
	t.Helper()
	k.Controller(t, "restart", "--set", "kubernetes.pod_subnets_driver="+driver)
	t.Cleanup(func() { k.Controller(t, "restart") })
}

// CreateNamespace creates a namespace and deletes it (waiting until it is
// gone, which waits for kuryr's finalizers) at cleanup.
func (c *Cloud) CreateNamespace(t testing.TB, name string) {
	t.Helper()
	ctx := context.Background()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if _, err := c.Kube.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create namespace %s: %v", name, err)
	}
	t.Cleanup(func() { c.DeleteNamespace(t, name) })
}

// DeleteNamespace deletes a namespace and waits until it is gone.
func (c *Cloud) DeleteNamespace(t testing.TB, name string) {
	t.Helper()
	c.DeleteNamespaceWithin(t, name, 3*time.Minute)
}

// DeleteNamespaceWithin deletes a namespace and waits up to timeout until
// it is gone.
func (c *Cloud) DeleteNamespaceWithin(t testing.TB, name string, timeout time.Duration) {
	t.Helper()
	ctx := context.Background()
	err := c.Kube.CoreV1().Namespaces().Delete(ctx, name, metav1.DeleteOptions{})
	if apierrors.IsNotFound(err) {
		return
	}
	if err != nil {
		t.Errorf("delete namespace %s: %v", name, err)
		return
	}
	start := time.Now()
	Eventually(t, timeout, 500*time.Millisecond, "namespace "+name+" gone", func() (bool, error) {
		_, err := c.Kube.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), err
	})
	// Where a test's time goes: kuryr deleting what it made for it.
	t.Logf("namespace %s gone %s after its deletion", name, time.Since(start).Round(100*time.Millisecond))
}

// TestPod is a pod of the test image pinned to node (a VM node too), with
// real probes run by the kubelet from the node: readiness over TCP,
// liveness over HTTP.
func (c *Cloud) TestPod(ns, name, node string) *corev1.Pod {
	var grace int64 = 1
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{"app": names.E2EApp}},
		Spec: corev1.PodSpec{
			NodeName: node, TerminationGracePeriodSeconds: &grace, DNSPolicy: corev1.DNSDefault,
			Tolerations: []corev1.Toleration{{Key: VMNodeTaint, Operator: corev1.TolerationOpExists}},
			Containers: []corev1.Container{{
				Name: "app", Image: c.TestImage, ImagePullPolicy: corev1.PullNever,
				ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{
					TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(8080)}}, PeriodSeconds: 2},
				LivenessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{
					HTTPGet: &corev1.HTTPGetAction{Path: "/", Port: intstr.FromInt32(8080)}}, PeriodSeconds: 5, FailureThreshold: 3},
			}},
		},
	}
}

// CreatePods creates n test pods in ns, spread over the nodes, and returns
// them as created.
func (c *Cloud) CreatePods(t testing.TB, ns, prefix string, n int) []*corev1.Pod {
	t.Helper()
	return c.CreatePodsOn(t, ns, prefix, n, c.Nodes)
}

// CreatePodsOn creates n test pods in ns, spread over nodes, and returns
// them as created.
func (c *Cloud) CreatePodsOn(t testing.TB, ns, prefix string, n int, nodes []string) []*corev1.Pod {
	t.Helper()
	var out []*corev1.Pod
	for i := 0; i < n; i++ {
		p := c.TestPod(ns, fmt.Sprintf("%s-%d", prefix, i), nodes[i%len(nodes)])
		created, err := c.Kube.CoreV1().Pods(ns).Create(context.Background(), p, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("create pod %s/%s: %v", ns, p.Name, err)
		}
		out = append(out, created)
	}
	return out
}

// WaitKuryrPorts waits until every pod has a KuryrPort with port data and
// returns them by pod name.
func (k *Kuryr) WaitKuryrPorts(t testing.TB, pods []*corev1.Pod, timeout time.Duration) map[string]*kuryrv1.KuryrPort {
	t.Helper()
	got := map[string]*kuryrv1.KuryrPort{}
	Eventually(t, timeout, 200*time.Millisecond, fmt.Sprintf("%d KuryrPorts with port data", len(pods)), func() (bool, error) {
		for _, p := range pods {
			if _, ok := got[p.Namespace+"/"+p.Name]; ok {
				continue
			}
			var kp kuryrv1.KuryrPort
			if err := k.Get(context.Background(), client.ObjectKey{Namespace: p.Namespace, Name: p.Name}, &kp); err != nil {
				return false, err
			}
			if _, ok := kp.Status.DefaultVIF(); ok && kp.Spec.PodUID == string(p.UID) {
				got[p.Namespace+"/"+p.Name] = &kp
			}
		}
		return len(got) == len(pods), fmt.Errorf("%d of %d ready", len(got), len(pods))
	})
	return got
}

// WaitKuryrPortsByName waits until a KuryrPort (not necessarily a pod's)
// carries port data.
func (k *Kuryr) WaitKuryrPortsByName(t testing.TB, kp *kuryrv1.KuryrPort, timeout time.Duration) *kuryrv1.KuryrPort {
	t.Helper()
	var got kuryrv1.KuryrPort
	Eventually(t, timeout, 200*time.Millisecond, "KuryrPort "+kp.Name+" with port data", func() (bool, error) {
		if err := k.Get(context.Background(), client.ObjectKeyFromObject(kp), &got); err != nil {
			return false, err
		}
		_, ok := got.Status.DefaultVIF()
		return ok, nil
	})
	return &got
}

// WaitKuryrPortsActive waits until the pods' KuryrPorts are marked active
// and returns their port ids.
func (k *Kuryr) WaitKuryrPortsActive(t testing.TB, pods []*corev1.Pod, timeout time.Duration) map[string]bool {
	t.Helper()
	ids := map[string]bool{}
	Eventually(t, timeout, 200*time.Millisecond, "KuryrPorts active", func() (bool, error) {
		for _, p := range pods {
			var kp kuryrv1.KuryrPort
			if err := k.Get(context.Background(), client.ObjectKey{Namespace: p.Namespace, Name: p.Name}, &kp); err != nil {
				return false, err
			}
			v, _ := kp.Status.DefaultVIF()
			if !v.Active {
				return false, fmt.Errorf("%s not active", p.Name)
			}
			ids[v.PortID] = true
		}
		return true, nil
	})
	return ids
}

// ClusterPorts lists the Neutron ports of this cluster's pods and pools:
// not the nodes' management and refuse ports, which live as long as the nodes, nor the
// ports of the cluster's own pods in kube-system (cluster DNS), which live
// as long as the cloud.
func (c *Cloud) ClusterPorts(t testing.TB, cluster string) []neutron.Port {
	t.Helper()
	system := c.systemPorts(t)
	var out []neutron.Port
	for _, p := range c.allClusterPorts(t, cluster) {
		if names.NodeOf(p.Tags) == "" && names.RefuseNodeOf(p.Tags) == "" && !system[p.ID] && !system[names.PodUIDOf(p.Tags)] {
			out = append(out, p)
		}
	}
	return out
}

// systemPorts are the UIDs of the pods in kube-system and the ports their
// KuryrPorts name.
func (c *Cloud) systemPorts(t testing.TB) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	pods, err := c.Kube.CoreV1().Pods(metav1.NamespaceSystem).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		out[string(p.UID)] = true
	}
	var kps kuryrv1.KuryrPortList
	if err := c.ConnectKuryr(t).List(context.Background(), &kps, client.InNamespace(metav1.NamespaceSystem)); err != nil {
		t.Fatal(err)
	}
	for _, kp := range kps.Items {
		for _, v := range kp.Status.VIFs {
			out[v.PortID] = true
		}
	}
	return out
}

// NodePorts lists the nodes' management ports, by node.
func (c *Cloud) NodePorts(t testing.TB, cluster string) map[string][]neutron.Port {
	t.Helper()
	return c.portsByNode(t, cluster, names.NodeOf)
}

// RefusePorts lists the nodes' refuse ports, by node.
func (c *Cloud) RefusePorts(t testing.TB, cluster string) map[string][]neutron.Port {
	t.Helper()
	return c.portsByNode(t, cluster, names.RefuseNodeOf)
}

func (c *Cloud) portsByNode(t testing.TB, cluster string, nodeOf func([]string) string) map[string][]neutron.Port {
	t.Helper()
	out := map[string][]neutron.Port{}
	for _, p := range c.allClusterPorts(t, cluster) {
		if n := nodeOf(p.Tags); n != "" {
			out[n] = append(out[n], p)
		}
	}
	return out
}

func (c *Cloud) allClusterPorts(t testing.TB, cluster string) []neutron.Port {
	t.Helper()
	ps, err := neutron.New(c.OS.Network).ListPorts(context.Background(), []string{names.ClusterTag(cluster)}, "")
	if err != nil {
		t.Fatal(err)
	}
	return ps
}

// WaitNoClusterPorts waits until no port of this cluster remains.
func (c *Cloud) WaitNoClusterPorts(t testing.TB, cluster string, timeout time.Duration) {
	t.Helper()
	Eventually(t, timeout, 500*time.Millisecond, "no pod or pool ports left", func() (bool, error) {
		ps := c.ClusterPorts(t, cluster)
		names := make([]string, 0, len(ps))
		for _, p := range ps {
			names = append(names, p.Name)
		}
		return len(ps) == 0, fmt.Errorf("%d left: %s", len(ps), strings.Join(names, " "))
	})
}
