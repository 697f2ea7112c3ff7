//go:build e2e

// Package faults runs the fault and crash campaigns against the local
// cloud: pods churned while Neutron fails, times out or commits without
// answering (through the fault proxy), while the controller and the
// daemons are killed, and while Neutron restarts. Each ends by checking
// that kuryr converged: every live pod Ready on its own port, no port
// without a live owner, no duplicate.
package faults

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kuryrv1 "github.com/kuryr-k8s/kuryr/api/v1"
	"github.com/kuryr-k8s/kuryr/pkg/names"
	"github.com/kuryr-k8s/kuryr/pkg/neutron"
	"github.com/kuryr-k8s/kuryr/test/e2e/framework"
)

// churn creates waves of pods in ns, spread over nodes, and, as each new
// wave comes, deletes the wave before the previous one; between(i) runs
// after wave i is created. It returns the pods left alive (the last two
// waves).
func churn(t *testing.T, c *framework.Cloud, ns string, nodes []string, waves, perWave int, between func(wave int)) []*corev1.Pod {
	t.Helper()
	var all [][]*corev1.Pod
	var zero int64
	for w := 0; w < waves; w++ {
		all = append(all, c.CreatePodsOn(t, ns, fmt.Sprintf("w%d", w), perWave, nodes))
		if w >= 2 {
			for _, p := range all[w-2] {
				err := c.Kube.CoreV1().Pods(ns).Delete(context.Background(), p.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero})
				if err != nil {
					t.Fatalf("delete %s: %v", p.Name, err)
				}
			}
		}
		if between != nil {
			between(w)
		}
		time.Sleep(time.Duration(2000+rand.Intn(2000)) * time.Millisecond)
	}
	var live []*corev1.Pod
	for _, wave := range all[max(0, waves-2):] {
		live = append(live, wave...)
	}
	return live
}

// converged waits until every live pod is Ready and Neutron holds exactly
// what they need: one port each (bound to its node, the one its KuryrPort
// names) carrying exactly the groups its policies give it, no pod port
// without a live pod, no policy or peer group without a live policy, and
// at most poolBound unused pooled ports per node, all of them known to the
// pool.
func converged(t *testing.T, c *framework.Cloud, k *framework.Kuryr, live []*corev1.Pod, poolBound int, timeout time.Duration) {
	t.Helper()
	start := time.Now()
	live = c.WaitReady(t, live, timeout)
	t.Logf("%d live pods Ready %s after the campaign", len(live), time.Since(start).Round(time.Millisecond))
	framework.Eventually(t, timeout, 2*time.Second, "Neutron converged", func() (bool, error) {
		err := check(t, c, k, live, poolBound)
		return err == nil, err
	})
	t.Logf("Neutron converged %s after the campaign: one port per live pod, nothing else", time.Since(start).Round(time.Millisecond))
}

func check(t *testing.T, c *framework.Cloud, k *framework.Kuryr, live []*corev1.Pod, poolBound int) error {
	var kps kuryrv1.KuryrPortList
	if err := k.List(context.Background(), &kps); err != nil {
		return err
	}
	named := map[string]*kuryrv1.KuryrPort{} // port id -> KuryrPort
	for i := range kps.Items {
		kp := &kps.Items[i]
		v, ok := kp.Status.DefaultVIF()
		if !ok {
			continue
		}
		if other, dup := named[v.PortID]; dup {
			return fmt.Errorf("port %s named by KuryrPorts %s and %s", v.PortID, other.Name, kp.Name)
		}
		named[v.PortID] = kp
	}
	byID := map[string]neutron.Port{}
	perPod := map[string]int{}
	freePool := map[string]int{}
	for _, p := range c.ClusterPorts(t, k.Cluster) {
		byID[p.ID] = p
		if uid := names.PodUIDOf(p.Tags); uid != "" {
			perPod[uid]++
		} else if node := names.PoolNodeOf(p.Tags); node != "" && named[p.ID] == nil {
			freePool[node]++
		}
	}
	liveUIDs := map[string]bool{}
	for _, pod := range live {
		liveUIDs[string(pod.UID)] = true
		if err := ownPort(pod, kps.Items, byID); err != nil {
			return err
		}
	}
	if err := checkPodPorts(perPod, liveUIDs); err != nil {
		return err
	}
	if err := checkNodePorts(t, c, k); err != nil {
		return err
	}
	if err := checkPolicyGroups(t, c, k, live, byID, kps.Items); err != nil {
		return err
	}
	return checkPool(c, freePool, poolBound)
}

// checkPodPorts: no pod has two ports (perPod: pod UID -> its ports), nor
// a pod that is gone (not in live) one.
func checkPodPorts(perPod map[string]int, live map[string]bool) error {
	for uid, n := range perPod {
		switch {
		case n > 1:
			return fmt.Errorf("%d ports for pod %s (duplicates)", n, uid)
		case !live[uid]:
			return fmt.Errorf("a port of pod %s, which is gone", uid)
		}
	}
	return nil
}

// checkNodePorts: each node has exactly one management port and one
// refuse port, the ones its annotations name.
func checkNodePorts(t *testing.T, c *framework.Cloud, k *framework.Kuryr) error {
	kinds := map[string]map[string][]neutron.Port{
		kuryrv1.NodePortAnnotation: c.NodePorts(t, k.Cluster), kuryrv1.RefusePortAnnotation: c.RefusePorts(t, k.Cluster)}
	for _, node := range c.Nodes {
		n, err := c.Kube.CoreV1().Nodes().Get(context.Background(), node, metav1.GetOptions{})
		if err != nil {
			return err
		}
		for annotation, ports := range kinds {
			var np kuryrv1.NodePort
			_ = json.Unmarshal([]byte(n.Annotations[annotation]), &np)
			if len(ports[node]) != 1 || ports[node][0].ID != np.PortID {
				return fmt.Errorf("node %s: %d ports in Neutron, annotation %s names %q", node, len(ports[node]), annotation, np.PortID)
			}
		}
	}
	return nil
}

// ownPort checks that the pod's KuryrPort names a port of its own, bound to
// its node.
func ownPort(pod *corev1.Pod, kps []kuryrv1.KuryrPort, byID map[string]neutron.Port) error {
	for _, kp := range kps {
		if kp.Spec.PodUID != string(pod.UID) {
			continue
		}
		v, _ := kp.Status.DefaultVIF()
		p, ok := byID[v.PortID]
		switch {
		case !ok:
			return fmt.Errorf("pod %s: its port %s is not in Neutron", pod.Name, v.PortID)
		case p.HostID != pod.Spec.NodeName || p.MACAddress != v.MACAddress:
			return fmt.Errorf("pod %s on %s: port %s bound to %q (vif_type %q, status %s, device %s/%s, created %s, "+
				"updated %s, tags %v) with MAC %s (KuryrPort: %s)", pod.Name, pod.Spec.NodeName, p.ID, p.HostID, p.VIFType,
				p.Status, p.DeviceOwner, p.DeviceID, p.CreatedAt.Format(time.RFC3339), p.UpdatedAt.Format(time.RFC3339), p.Tags,
				p.MACAddress, v.MACAddress)
		}
		return nil
	}
	return fmt.Errorf("pod %s has no KuryrPort", pod.Name)
}

// checkPool: unused pooled ports within the bound, and every one of them in
// the pool's own count (one it does not know would never be used nor
// deleted).
func checkPool(c *framework.Cloud, freePool map[string]int, bound int) error {
	if bound == 0 {
		for node, n := range freePool {
			return fmt.Errorf("%d unused pooled ports on %s with pools off", n, node)
		}
		return nil
	}
	gauge, err := c.PoolFree()
	if err != nil {
		return err
	}
	for node, n := range freePool {
		if n > bound {
			return fmt.Errorf("%d unused pooled ports on %s, bound %d", n, node, bound)
		}
		if int(gauge[node]) != n {
			return fmt.Errorf("%d unused pooled ports on %s in Neutron, %v in the pool", n, node, gauge[node])
		}
	}
	return nil
}
