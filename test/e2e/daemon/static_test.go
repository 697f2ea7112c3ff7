//go:build e2e

package daemon

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kuryrv1 "github.com/kuryr-k8s/kuryr/api/v1"
	"github.com/kuryr-k8s/kuryr/test/e2e/framework"
)

// TestStaticPod: a static pod (a manifest in the kubelet's staticPodPath)
// gets a network: the runtime knows it by the kubelet's config hash, its
// mirror pod in the API by another UID, and kuryr matches the two.
func TestStaticPod(t *testing.T) {
	c := framework.Connect(t)
	k := c.ConnectKuryr(t)
	node := c.Nodes[len(c.Nodes)-1]
	name := framework.Name("static")
	manifest := filepath.Join(os.Getenv("KURYR_CLOUD_NODES_DIR"), node, "kubelet", "manifests", name+".yaml")
	body := fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: %s, namespace: default}
spec:
  terminationGracePeriodSeconds: 1
  dnsPolicy: Default
  containers:
  - name: app
    image: %s
    imagePullPolicy: Never
    readinessProbe: {tcpSocket: {port: 8080}, periodSeconds: 2}
`, name, c.TestImage)
	if err := os.WriteFile(manifest, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.Remove(manifest) })
	mirror := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name + "-" + node, Namespace: "default"}}
	framework.Eventually(t, time.Minute, 500*time.Millisecond, "the mirror pod", func() (bool, error) {
		got, err := c.Kube.CoreV1().Pods("default").Get(context.Background(), mirror.Name, metav1.GetOptions{})
		if err == nil {
			mirror = got
		}
		return err == nil, err
	})
	ready := c.WaitReady(t, []*corev1.Pod{mirror}, 2*time.Minute)[0]
	var kp kuryrv1.KuryrPort
	if err := k.Get(context.Background(), client.ObjectKeyFromObject(ready), &kp); err != nil {
		t.Fatal(err)
	}
	hash := ready.Annotations["kubernetes.io/config.mirror"]
	if !kp.Spec.PodStatic || kp.Spec.KubeletPodUID != hash || hash == "" || hash == string(ready.UID) {
		t.Errorf("KuryrPort spec %+v, mirror hash %q, UID %s", kp.Spec, hash, ready.UID)
	}
	t.Logf("static pod %s Ready with IP %s (kubelet UID %s, mirror UID %s)", ready.Name, ready.Status.PodIP, hash, ready.UID)
	// Its mirror pod deleted, the kubelet recreates it with a new UID; the
	// static pod keeps its port.
	port, _ := kp.Status.DefaultVIF()
	if err := c.Kube.CoreV1().Pods("default").Delete(context.Background(), ready.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	framework.Eventually(t, time.Minute, 500*time.Millisecond, "a new mirror pod", func() (bool, error) {
		got, err := c.Kube.CoreV1().Pods("default").Get(context.Background(), ready.Name, metav1.GetOptions{})
		return err == nil && got.UID != ready.UID, err
	})
	time.Sleep(3 * time.Second) // what would go, would have gone
	var after kuryrv1.KuryrPort
	if err := k.Get(context.Background(), client.ObjectKeyFromObject(ready), &after); err != nil {
		t.Fatal(err)
	}
	if v, _ := after.Status.DefaultVIF(); v.PortID != port.PortID || !after.DeletionTimestamp.IsZero() {
		t.Errorf("after the mirror pod was recreated: port %s (was %s), deleting %v", v.PortID, port.PortID, after.DeletionTimestamp)
	}
	if err := os.Remove(manifest); err != nil {
		t.Fatal(err)
	}
	// Gone for good: its KuryrPort goes once the controller's grace for a
	// missing mirror pod (2 min) is over.
	framework.Eventually(t, 3*time.Minute, 500*time.Millisecond, "its KuryrPort gone", func() (bool, error) {
		err := k.Get(context.Background(), client.ObjectKeyFromObject(ready), &kp)
		return apierrors.IsNotFound(err), err
	})
}
