//go:build e2e && destructive

package uninstall

import (
	"context"
	"net"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/containernetworking/plugins/pkg/ns"
	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/loadbalancers"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/security/groups"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kuryrv1 "github.com/kuryr-k8s/kuryr/api/v1"
	"github.com/kuryr-k8s/kuryr/pkg/names"
	"github.com/kuryr-k8s/kuryr/test/e2e/framework"
)

// TestMigrateFromPython: a cluster as the original (Python)
// kuryr-kubernetes leaves it (see pythonize) moves to kuryr with
// `kubectl kuryr migrate prepare`, kuryr installed, and `migrate finish`,
// while a pod opens a connection to a ClusterIP Service every 200 ms and
// the original's NetworkPolicy group admits it and denies another pod.
// No connection of the admitted pod fails, none of the denied pod's gets
// through; every pod keeps its port (same id, same address), the Service
// its load balancer; the original's finalizers and groups are gone; and
// kuryr then runs the cluster: a pod deleted releases its port, a new pod
// gets its network.
func TestMigrateFromPython(t *testing.T) {
	c, k, ns := framework.Setup(t, "migrate")
	ctx := context.Background()
	t.Cleanup(func() { k.Controller(t, "start") }) // kuryr's CRDs and controller, whatever happened
	forgetMigration := func() {
		kubectlQuiet("-n", "kube-system", "delete", "configmap", names.MigrationConfigMap, "--ignore-not-found")
	}
	forgetMigration() // a crashed run's
	t.Cleanup(forgetMigration)

	w := newWeb(t, c, k, ns, corev1.ServiceTypeLoadBalancer)
	framework.Eventually(t, 3*time.Minute, time.Second, "the Service's floating IP", func() (bool, error) {
		var klb kuryrv1.KuryrLoadBalancer
		err := k.Get(ctx, client.ObjectKey{Namespace: ns, Name: "web"}, &klb)
		return err == nil && klb.Status.FloatingIP != nil, err
	})
	w.admits(t, "kuryr: the client reaches the Service, the other pod does not")

	start := time.Now()
	orig := pythonize(t, c, k)
	t.Logf("the cluster made the original's in %s: %d pods' ports, %d load balancers, %d floating IPs, %d policy groups",
		time.Since(start).Round(time.Second), len(orig.ports), len(orig.balancer), len(orig.floating), len(orig.groups))
	if len(orig.floating) == 0 {
		t.Fatal("no floating IP to keep")
	}
	w.admits(t, "the original's groups: the client reaches the Service, the other pod does not")

	traffic := startTraffic(t, w.allowed, w.denied, w.vip)
	plugin := framework.Plugin(t)
	backup := filepath.Join(t.TempDir(), "backup.yaml")
	migrate(t, plugin, "prepare", "--python-namespace", pythonNamespace) // says what it would do
	start = time.Now()
	migrate(t, plugin, "prepare", "--python-namespace", pythonNamespace, "--yes", "--backup", backup)
	t.Logf("prepare took %s", time.Since(start).Round(time.Second))
	start = time.Now()
	k.Controller(t, "start") // helm upgrade: kuryr's CRDs, its controller
	t.Logf("kuryr installed in %s", time.Since(start).Round(time.Second))
	start = time.Now()
	migrate(t, plugin, "finish", "--yes", "--timeout", "5m")
	t.Logf("finish took %s", time.Since(start).Round(time.Second))
	time.Sleep(3 * time.Second) // traffic after kuryr regrouped the ports, too
	traffic.stop(t, "the migration")

	checkAdopted(t, c, k, orig)
	checkReleased(t, c, orig)
	for key, sg := range orig.groups {
		if _, err := groups.Get(ctx, c.OS.Network, sg).Extract(); !gophercloud.ResponseCodeIs(err, 404) {
			t.Errorf("the original's group %s of NetworkPolicy %s is still there (%v)", sg, key, err)
		}
	}
	if out, err := exec.Command("grep", "-c", "kind: KuryrPort", backup).Output(); err != nil || strings.TrimSpace(string(out)) == "0" {
		t.Errorf("the backup %s holds no KuryrPort (%v)", backup, err)
	}

	// kuryr runs the cluster now: a deleted pod's port goes, a new pod gets
	// its network and the policy.
	gone := orig.ports[ns+"/"+w.servers[0].Name]
	if err := c.Kube.CoreV1().Pods(ns).Delete(ctx, w.servers[0].Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	framework.Eventually(t, 2*time.Minute, time.Second, "the deleted pod's port gone from Neutron", func() (bool, error) {
		_, err := ports.Get(ctx, c.OS.Network, gone).Extract()
		return gophercloud.ResponseCodeIs(err, 404), err
	})
	late := c.WaitReady(t, createLabelled(t, c, ns, "late", map[string]string{"app": "web"}, 1), 3*time.Minute)
	if _, err := framework.HTTPGet(w.allowed, net.JoinHostPort(late[0].Status.PodIP, "8080"), 5*time.Second); err != nil {
		t.Errorf("client → the new pod: %v", err)
	}
	if _, err := framework.HTTPGet(w.denied, net.JoinHostPort(late[0].Status.PodIP, "8080"), time.Second); err == nil {
		t.Errorf("the other pod reaches the new pod: the policy does not hold it")
	}
}

func migrate(t *testing.T, plugin string, args ...string) {
	t.Helper()
	out, err := exec.Command(plugin, append([]string{"migrate"}, args...)...).CombinedOutput()
	t.Logf("kubectl kuryr migrate %s:\n%s", strings.Join(args, " "), out)
	if err != nil {
		t.Fatalf("migrate %s: %v", args[0], err)
	}
}

// checkAdopted: kuryr's objects name what the original made.
func checkAdopted(t *testing.T, c *framework.Cloud, k *framework.Kuryr, orig *pythonized) {
	t.Helper()
	ctx := context.Background()
	for key, port := range orig.ports {
		ns, name, _ := strings.Cut(key, "/")
		var kp kuryrv1.KuryrPort
		if err := k.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &kp); err != nil {
			t.Errorf("pod %s: %v", key, err)
			continue
		}
		if got := kp.Status.VIFs[kuryrv1.DefaultInterface].PortID; got != port {
			t.Errorf("pod %s: kuryr's port %s, the original's %s", key, got, port)
		}
		p, err := ports.Get(ctx, c.OS.Network, port).Extract()
		if err != nil {
			t.Errorf("pod %s's port %s: %v", key, port, err)
			continue
		}
		if !slices.Contains(p.Tags, names.ClusterTag(k.Cluster)) || !slices.Contains(p.Tags, names.PodTag(kp.Spec.PodUID)) ||
			slices.Contains(p.Tags, names.AdoptedTag) {
			t.Errorf("pod %s's port %s tags %v", key, port, p.Tags)
		}
	}
	for key, lbID := range orig.balancer {
		ns, name, _ := strings.Cut(key, "/")
		var klb kuryrv1.KuryrLoadBalancer
		if err := k.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &klb); err != nil {
			t.Errorf("Service %s: %v", key, err)
			continue
		}
		if klb.Status.LoadBalancer == nil || klb.Status.LoadBalancer.ID != lbID {
			t.Errorf("Service %s: kuryr's load balancer %+v, the original's %s", key, klb.Status.LoadBalancer, lbID)
		}
		if lb, err := loadbalancers.Get(ctx, c.OS.LoadBalancer, lbID).Extract(); err != nil || !slices.Contains(lb.Tags, names.ClusterTag(k.Cluster)) {
			t.Errorf("Service %s's load balancer %s: %v", key, lbID, err)
		}
		if fip, ok := orig.floating[key]; ok && (klb.Status.FloatingIP == nil || klb.Status.FloatingIP.ID != fip) {
			t.Errorf("Service %s: kuryr's floating IP %+v, the original's %s", key, klb.Status.FloatingIP, fip)
		}
	}
}

// checkReleased: no Pod, Service or NetworkPolicy keeps the original's
// finalizer, and the original is gone.
func checkReleased(t *testing.T, c *framework.Cloud, orig *pythonized) {
	t.Helper()
	ctx := context.Background()
	for key := range orig.ports {
		ns, name, _ := strings.Cut(key, "/")
		p, err := c.Kube.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err == nil && slices.Contains(p.Finalizers, names.PythonPodFinalizer) {
			t.Errorf("pod %s keeps the original's finalizer", key)
		}
	}
	for key := range orig.balancer {
		ns, name, _ := strings.Cut(key, "/")
		s, err := c.Kube.CoreV1().Services(ns).Get(ctx, name, metav1.GetOptions{})
		if err == nil && slices.Contains(s.Finalizers, names.PythonServiceFinalizer) {
			t.Errorf("Service %s keeps the original's finalizer", key)
		}
	}
	for key := range orig.groups {
		ns, name, _ := strings.Cut(key, "/")
		p, err := c.Kube.NetworkingV1().NetworkPolicies(ns).Get(ctx, name, metav1.GetOptions{})
		if err == nil && slices.Contains(p.Finalizers, names.PythonPolicyFinalizer) {
			t.Errorf("NetworkPolicy %s keeps the original's finalizer", key)
		}
	}
	d, err := c.Kube.AppsV1().Deployments(pythonNamespace).Get(ctx, names.PythonController, metav1.GetOptions{})
	if err != nil || d.Spec.Replicas == nil || *d.Spec.Replicas != 0 {
		t.Errorf("the original's controller not scaled to 0 (%v)", err)
	}
	if _, err := c.Kube.AppsV1().DaemonSets(pythonNamespace).Get(ctx, names.PythonDaemonSet, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the original's DaemonSet is still there (%v)", err)
	}
}

// traffic is a client's connections to a Service every 200 ms, and a
// denied pod's (a NetworkPolicy admits the one, not the other): none of
// the first may fail, none of the second get through.
type traffic struct {
	tries, failed, leaked atomic.Int64
	halt                  func()
}

func startTraffic(t *testing.T, allowed, denied ns.NetNS, vip string) *traffic {
	tr := &traffic{}
	// Halted before the namespaces' handles close (cleanups run last
	// first), and if anything fails the test: no log after the test ends.
	stop := make(chan struct{})
	var once sync.Once
	var wg sync.WaitGroup
	tr.halt = func() { once.Do(func() { close(stop) }); wg.Wait() }
	t.Cleanup(tr.halt)
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			case <-time.After(200 * time.Millisecond):
			}
			tr.tries.Add(1)
			if _, err := framework.HTTPGet(allowed, vip, 3*time.Second); err != nil {
				tr.failed.Add(1)
				t.Logf("%s: client → Service failed: %v", time.Now().Format("15:04:05.000"), err)
			}
			if _, err := framework.HTTPGet(denied, vip, 300*time.Millisecond); err == nil {
				tr.leaked.Add(1)
				t.Logf("%s: the other pod got through", time.Now().Format("15:04:05.000"))
			}
		}
	}()
	return tr
}

// stop ends the traffic and checks it (during says when it flowed).
func (tr *traffic) stop(t *testing.T, during string) {
	t.Helper()
	tr.halt()
	t.Logf("during %s: %d connections from the client, %d failed; %d of the other pod's got through",
		during, tr.tries.Load(), tr.failed.Load(), tr.leaked.Load())
	if tr.failed.Load() > 0 {
		t.Errorf("%d of the client's %d connections failed", tr.failed.Load(), tr.tries.Load())
	}
	if tr.leaked.Load() > 0 {
		t.Errorf("%d of the denied pod's connections got through", tr.leaked.Load())
	}
}
