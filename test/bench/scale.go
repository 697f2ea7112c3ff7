package main

import (
	"context"
	"fmt"
	"os/exec"
	"time"

	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kuryrv1 "github.com/kuryr-k8s/kuryr/api/v1"
	"github.com/kuryr-k8s/kuryr/pkg/neutron"
)

// simulatedLabel marks the simulated nodes (hack/bench-scale.sh: kwok
// plays their kubelets; each is an OVN chassis Neutron binds ports to).
const simulatedLabel = "kuryr.openstack.org/simulated-node"

// benchScale: n pods at once on the simulated nodes. The control plane,
// kuryr-controller, Neutron and OVN are real; only the nodes' kubelets
// (kwok) and their ovn-controllers (a chassis record kept alive) are
// simulated, so what is measured is the controller's side: Neutron's bulk
// creation of n ports bound to those nodes as the yardstick, then a
// Deployment of n replicas until every KuryrPort has its port data; the
// controller's OpenStack requests per pod, its memory, and its requests
// while nothing changes.
func benchScale(ctx context.Context, e *env, n int, subnet string, yardstick bool) error {
	nodes, err := simulatedNodes(ctx, e)
	if err != nil {
		return err
	}
	if subnet != "" { // the pods' subnet of the run, the yardstick's too
		sub, err := neutron.New(e.OS.Network).GetSubnet(ctx, subnet)
		if err != nil {
			return fmt.Errorf("subnet %s: %w", subnet, err)
		}
		e.PodNet, e.PodSubnet = sub.NetworkID, sub.ID
	}
	fmt.Printf("kuryr-bench scale: a %d-replica Deployment over %d simulated nodes\n\n", n, len(nodes))
	e.Nodes = nodes // the yardstick's ports are bound to them too
	// The yardstick as kuryr asks: bulk POSTs of [controller]
	// port_batch_size (50), port_workers (2) at a time (none: 0 ports).
	yn := n
	if !yardstick {
		yn = 0
	}
	bulk, ns, err := prepareChunks(ctx, e, yn, 50, 2)
	if err != nil {
		return err
	}
	defer deleteNamespace(e, ns)
	before, err := scrape(e)
	if err != nil {
		return err
	}
	start := time.Now()
	d := deployment(e, n)
	d.Spec.Template.Spec.NodeSelector = map[string]string{simulatedLabel: "true"}
	d.Spec.Template.Spec.Tolerations = []corev1.Toleration{{Key: simulatedLabel, Operator: corev1.TolerationOpExists}}
	if _, err := e.Kube.AppsV1().Deployments(ns).Create(ctx, d, metav1.CreateOptions{}); err != nil {
		return err
	}
	stop := reportProgress(ctx, e, ns, start, 30*time.Second)
	took, err := waitAllPorts(ctx, e, ns, n, start, 20*time.Minute)
	stop()
	if err != nil {
		return err
	}
	after, err := scrape(e)
	if err != nil {
		return err
	}
	fmt.Printf("kuryr: Deployment created -> all %d KuryrPorts with port data %s\n", n, secs(took))
	if yardstick {
		fmt.Printf("target: <= 1.3 x Neutron's time (%s): %s (%.2f x)\n", secs(bulk*13/10), verdict(took <= bulk*13/10), took.Seconds()/bulk.Seconds())
	}
	printRequests(before, after, n)
	fmt.Printf("controller: resident memory %.0f MiB, CPU %.1f s for the burst\n",
		gauge(after, "process_resident_memory_bytes")/(1<<20), gauge(after, "process_cpu_seconds_total")-gauge(before, "process_cpu_seconds_total"))
	if err := idleRequests(e, n, time.Minute); err != nil {
		return err
	}
	return restartAtScale(ctx, e, n, subnet)
}

// restartAtScale restarts kuryr-controller with the run's pod subnet, and
// reports its start-up (process start -> leader ready) and its Neutron
// requests over the 30 s after it is ready: with nothing changed it must
// write nothing.
func restartAtScale(ctx context.Context, e *env, n int, subnet string) error {
	args := []string{e.ctl, "controller", "restart"}
	if subnet != "" {
		args = append(args, "--set", "neutron_defaults.pod_subnet="+subnet)
	}
	if out, err := exec.CommandContext(ctx, "bash", args...).CombinedOutput(); err != nil {
		return fmt.Errorf("controller restart: %v: %s", err, out)
	}
	time.Sleep(30 * time.Second)
	mf, err := scrape(e)
	if err != nil {
		return err
	}
	reads, writes := requestCounts(mf, "network")
	ready := gauge(mf, "kuryr_controller_startup_seconds")
	fmt.Printf("kuryr: controller restarted with %d pods: process start -> ready leader %.1f s; Neutron from its start to 30 s after ready: %.0f reads, %.0f writes\n",
		n, ready, reads, writes)
	fmt.Printf("target: ready <= 10 s: %s; 0 writes: %s\n", verdict(ready > 0 && ready <= 10), verdict(writes == 0))
	for _, m := range mf["kuryr_cleanup_sweep_seconds"].GetMetric() {
		if h := m.GetHistogram(); h.GetSampleCount() > 0 {
			fmt.Printf("kuryr: sweeps of the restarted controller (%s): %d, %.2f s each on average, with %d pods' ports\n",
				label(m, "result"), h.GetSampleCount(), h.GetSampleSum()/float64(h.GetSampleCount()), n)
		}
	}
	return nil
}

// reportProgress prints, every interval until stopped, how many pods and
// KuryrPorts ns has and how many of those have their port data.
func reportProgress(ctx context.Context, e *env, ns string, start time.Time, interval time.Duration) (stop func()) {
	done := make(chan struct{})
	go func() {
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
			}
			var kps kuryrv1.KuryrPortList
			pods, err := e.Kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
			if err == nil {
				err = e.kuryr.List(ctx, &kps, client.InNamespace(ns))
			}
			if err != nil {
				fmt.Printf("  %4.0fs: %v\n", time.Since(start).Seconds(), err)
				continue
			}
			fmt.Printf("  %4.0fs: %d pods, %d KuryrPorts, %d with port data\n",
				time.Since(start).Seconds(), len(pods.Items), len(kps.Items), withData(kps.Items))
		}
	}()
	return func() { close(done) }
}

// simulatedNodes are the nodes hack/bench-scale.sh made.
func simulatedNodes(ctx context.Context, e *env) ([]string, error) {
	list, err := e.Kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: simulatedLabel + "=true"})
	if err != nil {
		return nil, err
	}
	var out []string
	for _, n := range list.Items {
		out = append(out, n.Name)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no node labelled %s=true: run make bench-scale (hack/bench-scale.sh)", simulatedLabel)
	}
	return out, nil
}

// printRequests prints the controller's Neutron requests between two
// scrapes, per pod.
func printRequests(before, after map[string]*dto.MetricFamily, n int) {
	r0, w0 := requestCounts(before, "network")
	r1, w1 := requestCounts(after, "network")
	fmt.Printf("kuryr: Neutron requests per pod: %.2f reads, %.2f writes (reads: %s)\n",
		(r1-r0)/float64(n), (w1-w0)/float64(n), readsByResource(before, after, "network", n))
}

// idleRequests measures the controller's OpenStack requests while nothing
// changes, with the n pods standing.
func idleRequests(e *env, n int, over time.Duration) error {
	before, err := scrape(e)
	if err != nil {
		return err
	}
	time.Sleep(over)
	after, err := scrape(e)
	if err != nil {
		return err
	}
	var rate [2]float64
	for i, svc := range []string{"network", "load-balancer"} {
		r0, w0 := requestCounts(before, svc)
		r1, w1 := requestCounts(after, svc)
		rate[i] = (r1 - r0 + w1 - w0) / over.Seconds()
	}
	fmt.Printf("kuryr: idle with %d pods, over %s: Neutron %.2f requests/s (reads/s: %s), Octavia %.2f requests/s\n",
		n, over, rate[0], readsByResource(before, after, "network", int(over.Seconds())), rate[1])
	return nil
}

// gauge is the value of an unlabelled gauge or counter (0 when absent).
func gauge(mf map[string]*dto.MetricFamily, name string) float64 {
	ms := mf[name].GetMetric()
	if len(ms) == 0 {
		return 0
	}
	if g := ms[0].GetGauge(); g != nil {
		return g.GetValue()
	}
	return ms[0].GetCounter().GetValue()
}
