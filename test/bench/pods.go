package main

import (
	"context"
	"fmt"
	"time"

	dto "github.com/prometheus/client_model/go"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kuryrv1 "github.com/kuryr-k8s/kuryr/api/v1"
	"github.com/kuryr-k8s/kuryr/pkg/names"
	"github.com/kuryr-k8s/kuryr/test/e2e/framework"
)

// pythonKuryrPods: the retired Python kuryr on this kind of local cloud.
const pythonKuryrPods = "74.5s until all 50 Running; CNI ADD 22.9s p50 / 48.8s p99"

// benchPods: Neutron's bulk creation of n ports as the yardstick, then a
// Deployment of n replicas created at once, until every pod runs.
func benchPods(ctx context.Context, e *env, n int) error {
	fmt.Printf("kuryr-bench pods: a %d-replica Deployment over %d nodes\n\n", n, len(e.Nodes))
	bulk, ns, err := prepare(ctx, e, n)
	if err != nil {
		return err
	}
	defer deleteNamespace(e, ns)
	before := scrapeDaemons(e)
	start := time.Now()
	if _, err := e.Kube.AppsV1().Deployments(ns).Create(ctx, deployment(e, n), metav1.CreateOptions{}); err != nil {
		return err
	}
	allPorts, allRunning, err := waitAllRunning(ctx, e, ns, n, start)
	if err != nil {
		return err
	}
	after := scrapeDaemons(e)
	fmt.Printf("kuryr: Deployment created -> all %d KuryrPorts with port data %s\n", n, secs(allPorts))
	fmt.Printf("kuryr: Deployment created -> all %d pods Running          %s\n", n, secs(allRunning))
	stages := map[string]histogramDelta{}
	for node := range after {
		for _, st := range []string{"wait_port", "plug", "wait_usable", "plug_and_usable"} {
			stages[st] = stages[st].add(histDelta(before[node], after[node], "kuryr_cni_add_stage_seconds", st))
		}
	}
	for _, st := range []string{"wait_port", "plug", "wait_usable", "plug_and_usable"} {
		h := stages[st]
		fmt.Printf("kuryr: CNI ADD %-16s p50 %s  p99 %s   (histogram buckets, %v ADDs)\n", st, secs(h.quantile(.5)), secs(h.quantile(.99)), h.total)
	}
	p99 := stages["plug_and_usable"].quantile(.99)
	fmt.Printf("\ntarget: plugging + waiting-for-usable p99 <= 1s: %s (%s)\n", verdict(p99 <= time.Second), secs(p99))
	fmt.Printf("target: all %d Running within 1.5 x Neutron's bulk time (%s): %s (%.2f x)\n",
		n, secs(bulk*3/2), verdict(allRunning <= bulk*3/2), allRunning.Seconds()/bulk.Seconds())
	fmt.Printf("for scale: the retired Python kuryr on this kind of cloud: %s\n", pythonKuryrPods)
	return nil
}

func verdict(ok bool) string {
	if ok {
		return "met"
	}
	return "MISSED"
}

func deployment(e *env, n int) *appsv1.Deployment {
	replicas, grace := int32(n), int64(0)
	labels := map[string]string{"app": names.Bench}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "bench"},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas, Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{TerminationGracePeriodSeconds: &grace, DNSPolicy: corev1.DNSDefault,
					Containers: []corev1.Container{{Name: "app", Image: e.TestImage, ImagePullPolicy: corev1.PullNever}}},
			},
		},
	}
}

// timeline: print progress each second (-timeline).
var timeline bool

// waitAllRunning polls until every pod runs; it also says when every
// KuryrPort first carried port data, which splits the controller's share of
// the time from the nodes'.
func waitAllRunning(ctx context.Context, e *env, ns string, n int, start time.Time) (allPorts, allRunning time.Duration, err error) {
	printed := 0
	// 10 minutes: 50 pods in an emulated guest node take over 4.
	err = poll(10*time.Minute, 100*time.Millisecond, func() (bool, error) {
		var kps kuryrv1.KuryrPortList
		if err := e.kuryr.List(ctx, &kps, client.InNamespace(ns)); err != nil {
			return false, framework.Stop(err)
		}
		if withData(kps.Items) == n && allPorts == 0 {
			allPorts = time.Since(start)
		}
		pods, err := e.Kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, framework.Stop(err)
		}
		sandboxes, running := progress(pods.Items)
		if s := int(time.Since(start).Seconds()); timeline && s > printed {
			printed = s
			fmt.Printf("  %3ds: %2d pods, %2d with port data, %2d sandboxes ready, %2d Running\n",
				s, len(pods.Items), withData(kps.Items), sandboxes, running)
		}
		if running == n {
			allRunning = time.Since(start)
		}
		return running == n, nil
	}, func() error { return fmt.Errorf("not all %d pods Running after 10 minutes", n) })
	if err != nil {
		return 0, 0, err
	}
	return allPorts, allRunning, nil
}

func progress(pods []corev1.Pod) (sandboxes, running int) {
	for _, p := range pods {
		if p.Status.Phase == corev1.PodRunning {
			running++
		}
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodReadyToStartContainers && c.Status == corev1.ConditionTrue {
				sandboxes++
			}
		}
	}
	return sandboxes, running
}

func withData(kps []kuryrv1.KuryrPort) int {
	n := 0
	for _, kp := range kps {
		if _, ok := kp.Status.DefaultVIF(); ok {
			n++
		}
	}
	return n
}

// scrapeDaemons reads each node daemon's metrics from inside the node's
// network namespace (the local cloud's nodes are namespaces).
func scrapeDaemons(e *env) map[string]map[string]*dto.MetricFamily {
	out := map[string]map[string]*dto.MetricFamily{}
	for _, node := range e.Nodes {
		mf, err := framework.Scrape(node, framework.DaemonMetricsPort)
		if err != nil {
			fmt.Printf("metrics of %s: %v\n", node, err)
			continue
		}
		out[node] = mf
	}
	return out
}
