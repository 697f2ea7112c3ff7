package main

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kuryrv1 "github.com/kuryr-k8s/kuryr/api/v1"
	"github.com/kuryr-k8s/kuryr/pkg/names"
	"github.com/kuryr-k8s/kuryr/pkg/neutron"
)

// pythonKuryr is what the retired Python kuryr took on this same kind of
// local cloud for a 50-pod burst, pod creation to ACTIVE port (for scale).
const pythonKuryr = "28.7s p50 / 67.5s p99"

// benchPorts: Neutron's own bulk creation of n bound ports, then a burst of
// n pods through kuryr, in one run.
func benchPorts(ctx context.Context, e *env, n int) error {
	fmt.Printf("kuryr-bench ports: %d pods over %d nodes\n\n", n, len(e.Nodes))
	bulk, ns, err := prepare(ctx, e, n)
	if err != nil {
		return err
	}
	defer deleteNamespace(e, ns)
	before, err := scrape(e)
	if err != nil {
		return fmt.Errorf("controller metrics: %w", err)
	}
	created, ready, err := burst(ctx, e, ns, n)
	if err != nil {
		return err
	}
	after, err := scrape(e)
	if err != nil {
		return err
	}
	report(n, bulk, created, ready, before, after)
	return nil
}

// burst creates n pods at once (10 clients) and returns when each was
// created and when its KuryrPort first carried port data.
func burst(ctx context.Context, e *env, ns string, n int) (created, ready map[string]time.Time, err error) {
	w, err := e.kuryr.Watch(ctx, &kuryrv1.KuryrPortList{}, client.InNamespace(ns))
	if err != nil {
		return nil, nil, err
	}
	defer func() { w.Stop() }()
	created, ready = map[string]time.Time{}, map[string]time.Time{}
	var mu sync.Mutex
	jobs := make(chan int)
	var wg sync.WaitGroup
	for c := 0; c < 10; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				p := pod(e, ns, i)
				t := time.Now()
				if _, err := e.Kube.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
					fmt.Printf("create %s: %v\n", p.Name, err)
					continue
				}
				mu.Lock()
				created[p.Name] = t
				mu.Unlock()
			}
		}()
	}
	go func() {
		for i := 0; i < n; i++ {
			jobs <- i
		}
		close(jobs)
	}()
	timeout := time.After(5 * time.Minute)
	for len(ready) < n {
		select {
		case ev, open := <-w.ResultChan():
			if !open || ev.Type == watch.Error {
				// The API server ended the watch: open another (a KuryrPort
				// that got its data in between is seen by the relist).
				w.Stop()
				if w, err = e.kuryr.Watch(ctx, &kuryrv1.KuryrPortList{}, client.InNamespace(ns)); err != nil {
					return nil, nil, err
				}
				continue
			}
			kp, ok := ev.Object.(*kuryrv1.KuryrPort)
			if _, has := ready[kp.GetName()]; ok && ev.Type != watch.Deleted && !has {
				if _, done := kp.Status.DefaultVIF(); done {
					ready[kp.Name] = time.Now()
				}
			}
		case <-timeout:
			return nil, nil, fmt.Errorf("only %d of %d KuryrPorts got port data in 5 minutes", len(ready), n)
		}
	}
	wg.Wait()
	return created, ready, nil
}

func pod(e *env, ns string, i int) *corev1.Pod {
	var grace int64
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("p-%03d", i), Namespace: ns},
		Spec: corev1.PodSpec{
			NodeName: e.Nodes[i%len(e.Nodes)], TerminationGracePeriodSeconds: &grace, DNSPolicy: corev1.DNSDefault,
			Containers: []corev1.Container{{Name: "app", Image: e.TestImage, ImagePullPolicy: corev1.PullNever}},
		},
	}
}

func report(n int, bulk time.Duration, created, ready map[string]time.Time, before, after map[string]*dto.MetricFamily) {
	var lat []time.Duration
	first, last := time.Time{}, time.Time{}
	for name, c := range created {
		r := ready[name]
		lat = append(lat, r.Sub(c))
		if first.IsZero() || c.Before(first) {
			first = c
		}
		if r.After(last) {
			last = r
		}
	}
	all := last.Sub(first)
	fmt.Printf("kuryr: pod created -> KuryrPort status written   p50 %s  p99 %s  max %s\n",
		secs(percentile(lat, 50)), secs(percentile(lat, 99)), secs(percentile(lat, 100)))
	for _, st := range []string{"port_created", "status_written"} {
		h := histDelta(before, after, "kuryr_kuryrport_stage_seconds", st)
		fmt.Printf("kuryr: reconcile start -> %-14s (controller) p50 %s  p99 %s   (histogram buckets, %v samples)\n",
			st, secs(h.quantile(.5)), secs(h.quantile(.99)), h.total)
	}
	fmt.Printf("kuryr: first pod created -> all %d KuryrPorts ready     %s\n", n, secs(all))
	r0, w0 := requestCounts(before, "network")
	r1, w1 := requestCounts(after, "network")
	fmt.Printf("kuryr: Neutron API calls per pod: %.2f reads, %.2f writes (whole controller, during the burst)\n",
		(r1-r0)/float64(n), (w1-w0)/float64(n))
	fmt.Printf("kuryr: Neutron reads per pod by resource: %s\n", readsByResource(before, after, "network", n))
	verdict := "met"
	if all > bulk*14/10 {
		verdict = "MISSED"
	}
	fmt.Printf("\ntarget: all KuryrPorts within 1.4 x Neutron's bulk time (%s): %s (%.2f x)\n",
		secs(bulk*14/10), verdict, all.Seconds()/bulk.Seconds())
	fmt.Printf("for scale: the retired Python kuryr on this kind of cloud: %s (pod creation -> ACTIVE port)\n", pythonKuryr)
}

// prepare measures the yardstick (Neutron's bulk creation of n ports) and
// creates the namespace the benchmark runs in.
func prepare(ctx context.Context, e *env, n int) (time.Duration, string, error) {
	return prepareChunks(ctx, e, n, n, 1)
}

// prepareChunks is prepare with the yardstick's ports created in bulk
// POSTs of batch ports, workers at a time.
// n = 0: no yardstick.
func prepareChunks(ctx context.Context, e *env, n, batch, workers int) (time.Duration, string, error) {
	settleNeutron(ctx, e)
	bulk, err := neutronBulkChunks(ctx, e, n, batch, workers)
	if err != nil {
		return 0, "", fmt.Errorf("neutron bulk baseline: %w", err)
	}
	// Neutron digests the deletions of the yardstick's ports (OVN updates
	// in every worker) for seconds after answering them.
	settleNeutron(ctx, e)
	switch {
	case n == 0:
	case batch >= n:
		fmt.Printf("Neutron alone: one bulk POST of %d bound ports           %s\n", n, secs(bulk))
	default:
		fmt.Printf("Neutron alone: %d bound ports in bulk POSTs of %d, %d at a time %s\n", n, batch, workers, secs(bulk))
	}
	ns := fmt.Sprintf("%s-%d", names.Bench, time.Now().Unix())
	_, err = e.Kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	return bulk, ns, err
}

// neutronBulkChunks times the creation of n bound, tagged ports in bulk
// POSTs of batch ports, workers of them at a time (one POST of all: the
// pods' yardstick; kuryr's own shape, [controller] port_batch_size and
// port_workers: the scale tier's), and deletes them.
func neutronBulkChunks(ctx context.Context, e *env, n, batch, workers int) (time.Duration, error) {
	var chunks [][]map[string]any
	for i := 0; i < n; i++ {
		if i%batch == 0 {
			chunks = append(chunks, nil)
		}
		chunks[len(chunks)-1] = append(chunks[len(chunks)-1], map[string]any{
			"network_id": e.PodNet, "project_id": e.ProjectID, "binding:host_id": e.Nodes[i%len(e.Nodes)],
			"device_owner": "compute:kuryr-bench", "security_groups": []string{e.PodSG},
			"fixed_ips": []map[string]string{{"subnet_id": e.PodSubnet}}, "tags": []string{names.Bench},
		})
	}
	net := e.OS.Network
	var mu sync.Mutex
	var ids []string
	start := time.Now()
	err := inParallel(len(chunks), workers, func(i int) error {
		req := map[string]any{"ports": chunks[i]}
		var resp struct {
			Ports []struct {
				ID string `json:"id"`
			} `json:"ports"`
		}
		if _, err := net.Post(ctx, net.ServiceURL("ports"), req, &resp, nil); err != nil {
			return err
		}
		mu.Lock()
		defer mu.Unlock()
		for _, p := range resp.Ports {
			ids = append(ids, p.ID)
		}
		return nil
	})
	took := time.Since(start)
	if err != nil {
		// A POST that went unanswered may have created its ports all the
		// same: found by the yardstick's tag, once Neutron is idle again.
		settleNeutron(ctx, e)
		tagged, lerr := neutron.New(net).ListPortIDs(ctx, []string{names.Bench}, "")
		if lerr != nil {
			fmt.Println("cleanup: the yardstick's ports not listed:", lerr)
		}
		for id := range tagged {
			if !slices.Contains(ids, id) {
				ids = append(ids, id)
			}
		}
	}
	deletePortIDs(ctx, e, ids)
	return took, err
}

// deletePortIDs deletes ports, four at a time.
func deletePortIDs(ctx context.Context, e *env, ids []string) {
	nc := neutron.New(e.OS.Network)
	_ = inParallel(len(ids), 4, func(i int) error {
		if err := nc.DeletePort(ctx, ids[i]); err != nil {
			fmt.Println("cleanup:", err)
		}
		return nil
	})
}

// settleNeutron waits (up to 30 s) until Neutron answers a cheap read in
// under 50 ms three times in a row: its workers are idle, so one
// measurement never pays for the work of the previous one.
func settleNeutron(ctx context.Context, e *env) {
	net := e.OS.Network
	fast := 0
	for deadline := time.Now().Add(30 * time.Second); fast < 3 && time.Now().Before(deadline); {
		start := time.Now()
		_, err := net.Get(ctx, net.ServiceURL("networks", e.PodNet), nil, nil)
		if err == nil && time.Since(start) < 50*time.Millisecond {
			fast++
		} else {
			fast = 0
		}
		time.Sleep(300 * time.Millisecond)
	}
}

// deleteNamespace deletes a namespace at once (no grace) and waits (up to
// 2 minutes) until it is gone.
func deleteNamespace(e *env, ns string) {
	ctx := context.Background()
	var zero int64
	_ = e.Kube.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{GracePeriodSeconds: &zero})
	_ = poll(2*time.Minute, 200*time.Millisecond, func() (bool, error) {
		_, err := e.Kube.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		return err != nil, nil
	}, func() error {
		fmt.Println("namespace", ns, "still terminating after 2 minutes")
		return nil
	})
}
