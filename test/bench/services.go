package main

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kuryrv1 "github.com/kuryr-k8s/kuryr/api/v1"
	"github.com/kuryr-k8s/kuryr/pkg/names"
	"github.com/kuryr-k8s/kuryr/pkg/octavia"
	"github.com/kuryr-k8s/kuryr/test/e2e/framework"
)

// benchServices: one Service through kuryr and one load balancer directly
// in Octavia; then n Services (a TCP and a UDP port, nb endpoints each)
// through kuryr and the same n load balancers directly in Octavia as the
// yardstick; then an endpoint change, a controller restart, a lone
// endpoint change, a new backend until it answers through every VIP, and
// the clean-up, in one run.
func benchServices(ctx context.Context, e *env, n, nb int) error {
	if n < 1 || nb < 3 {
		return errors.New("services: -services must be at least 1 and -backends at least 3 (one leaves in the endpoint change, two serve the lone Service)")
	}
	if e.OS.LoadBalancer == nil {
		return errors.New("OCTAVIA_URL is not set: source _output/local-cloud.env (written by make up)")
	}
	oc := octavia.New(e.OS.LoadBalancer)
	fmt.Printf("kuryr-bench services: %d Services (TCP 80 + UDP 9090, %d endpoints each) over %d nodes\n\n", n, nb, len(e.Nodes))
	if left, _, err := deleteYardstick(ctx, oc); err != nil || left > 0 {
		fmt.Printf("yardstick load balancers left by an earlier run: %d deleted (%v)\n", left, err)
	}
	ns := "bench-svc-" + rand.String(5)
	if _, err := e.Kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		return err
	}
	defer deleteNamespace(e, ns)
	backends, err := createBackends(ctx, e, ns, nb)
	if err != nil {
		return err
	}
	pr, err := newProber(e, backends)
	if err != nil {
		return err
	}
	defer pr.close()
	if err := oneService(ctx, e, oc, pr, backends, ns); err != nil {
		return err
	}
	kuryr, klbs, err := kuryrServices(ctx, e, pr, ns, n, 2*nb)
	if err != nil {
		return err
	}
	direct, err := yardstick(ctx, e, oc, pr, backends, n, kuryr)
	if err != nil {
		return err
	}
	if err := endpointChange(ctx, e, oc, ns, backends[0].Name, klbs, nb-1, direct.burst); err != nil {
		return err
	}
	if err := restartController(ctx, e, ns, n, 2*(nb-1)); err != nil {
		return err
	}
	if err := kuryrSolo(ctx, e, oc, ns, backends[1].Name, backends[2].Name, direct.solo); err != nil {
		return err
	}
	if err := backendReady(ctx, e, pr, ns, klbs, direct.burst); err != nil {
		return err
	}
	return cleanUp(ctx, e, oc, ns, klbs)
}

// createBackends creates nb backends spread over the nodes (HTTP on 8080
// answering the pod name, UDP on 9090 answering the hostname) and returns
// them Ready.
func createBackends(ctx context.Context, e *env, ns string, nb int) ([]corev1.Pod, error) {
	for i := 0; i < nb; i++ {
		if _, err := e.Kube.CoreV1().Pods(ns).Create(ctx, backendPod(e, fmt.Sprintf("web-%d", i), e.Nodes[i%len(e.Nodes)]), metav1.CreateOptions{}); err != nil {
			return nil, err
		}
	}
	var pods []corev1.Pod
	err := poll(3*time.Minute, 250*time.Millisecond, func() (bool, error) {
		list, err := e.Kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, framework.Stop(err)
		}
		pods = list.Items
		ready := 0
		for _, p := range pods {
			if framework.IsReady(&p) && p.Status.PodIP != "" {
				ready++
			}
		}
		return ready == nb, nil
	}, func() error { return fmt.Errorf("the %d backends not all Ready after 3 minutes", nb) })
	return pods, err
}

// backendPod is a backend of the Services on node: HTTP on 8080 answering
// the pod name, UDP on 9090 answering the hostname.
func backendPod(e *env, name, node string) *corev1.Pod {
	var grace int64
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": "bench-web"}},
		Spec: corev1.PodSpec{NodeName: node, TerminationGracePeriodSeconds: &grace, DNSPolicy: corev1.DNSDefault,
			Containers: []corev1.Container{{Name: "app", Image: e.TestImage, ImagePullPolicy: corev1.PullNever,
				Command: []string{"sh", "-c", "testapp udp-serve 9090 & exec /bin/serve"},
				Ports: []corev1.ContainerPort{{Name: "web", ContainerPort: 8080},
					{Name: "echo", ContainerPort: 9090, Protocol: corev1.ProtocolUDP}},
				ReadinessProbe: &corev1.Probe{PeriodSeconds: 1, ProbeHandler: corev1.ProbeHandler{
					HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromInt32(8080)}}},
			}}},
	}
}

// kuryrServices creates n Services at once and probes their VIPs until
// they answer on both ports; it returns the figures and the
// KuryrLoadBalancers once all are Ready with members members.
func kuryrServices(ctx context.Context, e *env, pr *prober, ns string, n, members int) (answers, []kuryrv1.KuryrLoadBalancer, error) {
	settleNeutron(ctx, e)
	before, err := scrape(e)
	if err != nil {
		return answers{}, nil, fmt.Errorf("controller metrics: %w", err)
	}
	targets, err := pr.createAll(n, func(i int) (string, error) {
		s, err := e.Kube.CoreV1().Services(ns).Create(ctx, service(i), metav1.CreateOptions{})
		if err != nil {
			return "", err
		}
		return s.Spec.ClusterIP, nil
	})
	if err != nil {
		return answers{}, nil, err
	}
	a := pr.await(targets)
	klbs, err := waitKLBs(ctx, e, ns, n, members, answerTimeout)
	if err != nil {
		return a, nil, err
	}
	after, err := scrape(e)
	if err != nil {
		return a, nil, err
	}
	a.print("kuryr", "Service created")
	g0, w0 := requestCounts(before, "load-balancer")
	g1, w1 := requestCounts(after, "load-balancer")
	fmt.Printf("kuryr: Octavia calls per Service: %.2f GETs, %.2f writes (whole controller, until all %d Ready)\n",
		(g1-g0)/float64(n), (w1-w0)/float64(n), n)
	fmt.Printf("kuryr: Octavia GETs per Service by resource: %s\n\n", readsByResource(before, after, "load-balancer", n))
	return a, klbs, nil
}

func service(i int) *corev1.Service {
	return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("svc-%02d", i)},
		Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "bench-web"}, Ports: []corev1.ServicePort{
			{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80, TargetPort: intstr.FromString("web")},
			{Name: "echo", Protocol: corev1.ProtocolUDP, Port: 9090, TargetPort: intstr.FromString("echo")}}}}
}

// waitKLBs waits until the namespace's n KuryrLoadBalancers are Ready with
// members members each, and returns them.
func waitKLBs(ctx context.Context, e *env, ns string, n, members int, timeout time.Duration) ([]kuryrv1.KuryrLoadBalancer, error) {
	ready := 0
	var list kuryrv1.KuryrLoadBalancerList
	err := poll(timeout, 250*time.Millisecond, func() (bool, error) {
		if err := e.kuryr.List(ctx, &list, client.InNamespace(ns)); err != nil {
			return false, framework.Stop(err)
		}
		ready = 0
		for _, k := range list.Items {
			if meta.IsStatusConditionTrue(k.Status.Conditions, kuryrv1.ConditionReady) && k.Status.Members == members {
				ready++
			}
		}
		return ready == n && len(list.Items) == n, nil
	}, func() error {
		return fmt.Errorf("%d of %d KuryrLoadBalancers Ready with %d members after %s", ready, n, members, timeout)
	})
	if err != nil {
		return nil, err
	}
	return list.Items, nil
}

// endpointChange takes one backend out of the Services (its label goes)
// and times until Octavia holds want members in both pools of every
// Service's load balancer.
func endpointChange(ctx context.Context, e *env, oc *octavia.Client, ns, pod string, klbs []kuryrv1.KuryrLoadBalancer, want int, direct time.Duration) error {
	patch := []byte(`{"metadata":{"labels":{"app":null}}}`)
	t0 := time.Now()
	if _, err := e.Kube.CoreV1().Pods(ns).Patch(ctx, pod, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		return err
	}
	lat := make([]time.Duration, len(klbs))
	var wg sync.WaitGroup
	for i, k := range klbs {
		var pools []string
		for _, l := range k.Status.Listeners {
			pools = append(pools, l.PoolID)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Spread the polls of the Services over the interval.
			time.Sleep(time.Duration(i) * memberPoll / time.Duration(len(klbs)))
			if at, ok := waitMembers(ctx, oc, pools, want, t0.Add(2*time.Minute)); ok {
				lat[i] = at.Sub(t0)
			} else {
				lat[i] = -1
			}
		}()
	}
	wg.Wait()
	for _, d := range lat {
		if d < 0 {
			return fmt.Errorf("some load balancers still without %d members per pool 2 minutes after the endpoint change", want)
		}
	}
	p99 := percentile(lat, 99)
	fmt.Printf("kuryr: backend relabelled -> %d members in both pools   p50 %s  p99 %s  max %s   (Octavia polled every %s)\n",
		want, secs(percentile(lat, 50)), secs(p99), secs(percentile(lat, 100)), memberPoll)
	fmt.Printf("target: endpoint change in Octavia p99 <= 1s: %s (%s)\n", verdict(p99 <= time.Second), secs(p99))
	if direct > 0 {
		fmt.Printf("the same change made directly in Octavia: p99 %s (kuryr %.2f x)\n", secs(direct), p99.Seconds()/direct.Seconds())
	}
	fmt.Println()
	return nil
}

// memberPoll: how often each Service's pools are read while waiting for an
// endpoint change (20 Services: 80 GETs a second; faster starves Octavia).
const memberPoll = 250 * time.Millisecond

// waitMembers polls the pools every memberPoll until each has want members,
// and says when the last one had.
func waitMembers(ctx context.Context, oc *octavia.Client, pools []string, want int, deadline time.Time) (time.Time, bool) {
	return waitMembersEvery(ctx, oc, pools, want, deadline, memberPoll)
}

func waitMembersEvery(ctx context.Context, oc *octavia.Client, pools []string, want int, deadline time.Time, every time.Duration) (time.Time, bool) {
	for len(pools) > 0 && time.Now().Before(deadline) {
		var left []string
		for _, p := range pools {
			if ms, err := oc.Members(ctx, p); err != nil || len(ms) != want {
				left = append(left, p)
			}
		}
		if pools = left; len(pools) > 0 {
			time.Sleep(every)
		}
	}
	return time.Now(), len(pools) == 0
}

// restartController restarts kuryr-controller (default configuration) and
// counts the Octavia writes of the new process once everything is Ready
// again and 20 s more have passed.
func restartController(ctx context.Context, e *env, ns string, n, members int) error {
	// Nothing left to do before the restart: the statuses are written too.
	if _, err := waitKLBs(ctx, e, ns, n, members, 2*time.Minute); err != nil {
		return err
	}
	start := time.Now()
	if out, err := exec.CommandContext(ctx, "bash", e.ctl, "controller", "restart").CombinedOutput(); err != nil {
		return fmt.Errorf("controller restart: %v: %s", err, out)
	}
	if _, err := waitKLBs(ctx, e, ns, n, members, 2*time.Minute); err != nil {
		return err
	}
	fmt.Printf("kuryr: controller restarted -> ready, all %d KuryrLoadBalancers Ready   %s\n", n, secs(time.Since(start)))
	time.Sleep(20 * time.Second)
	mf, err := scrape(e)
	if err != nil {
		return err
	}
	gets, writes := requestCounts(mf, "load-balancer")
	fmt.Printf("kuryr: Octavia calls of the restarted controller after 20 s more: %.0f GETs, %.0f writes (the cluster's other Services included)\n", gets, writes)
	fmt.Printf("target: no Octavia write after a restart: %s (%.0f)\n\n", verdict(writes == 0), writes)
	return nil
}

// cleanUp deletes the namespace and times until the Services' load
// balancers are gone from Octavia, and the namespace.
func cleanUp(ctx context.Context, e *env, oc *octavia.Client, ns string, klbs []kuryrv1.KuryrLoadBalancer) error {
	uids := map[string]bool{}
	for _, k := range klbs {
		for _, o := range k.OwnerReferences {
			if o.Kind == "Service" {
				uids[string(o.UID)] = true
			}
		}
	}
	var zero int64
	start := time.Now()
	if err := e.Kube.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
		return err
	}
	left := len(klbs)
	for deadline := start.Add(3 * time.Minute); left > 0 && time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		lbs, err := oc.FindLoadBalancers(ctx, []string{names.ClusterTag(e.cluster)})
		if err != nil {
			return err
		}
		left = 0
		for _, lb := range lbs {
			if uids[names.ServiceUIDOf(lb.Tags)] {
				left++
			}
		}
	}
	if left > 0 {
		return fmt.Errorf("%d of the Services' load balancers still in Octavia 3 minutes after the namespace was deleted", left)
	}
	fmt.Printf("kuryr: namespace deleted -> the %d load balancers gone from Octavia   %s\n", len(klbs), secs(time.Since(start)))
	deleteNamespace(e, ns)
	fmt.Printf("kuryr: namespace deleted -> namespace gone                        %s\n", secs(time.Since(start)))
	return nil
}
