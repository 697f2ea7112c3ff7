package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"

	"github.com/kuryr-k8s/kuryr/pkg/names"
	"github.com/kuryr-k8s/kuryr/test/e2e/framework"
)

// policySizes: what `kuryr-bench policy` creates and how often it
// measures.
type policySizes struct {
	pods, namespaces, policies int
	samples                    int // kuryr changes of each kind, (a) and (b)
	direct                     int // direct Neutron changes of each yardstick (0: none)
}

func (sz policySizes) check() error {
	if sz.pods < 4+sz.namespaces || sz.namespaces < 1 || sz.policies < 2 || sz.samples < 2 || sz.direct < 0 {
		return errors.New("policy: needs -namespaces >= 1, -pods >= 4 + namespaces, -policies >= 2, -samples >= 2, -direct >= 0")
	}
	return nil
}

// policyBench is one run: its namespaces (labelled bench=<run>), its probe
// pods, every policy it created (by UID: their Neutron groups are named
// after it), the peer groups they were seen to name and the rows of the
// closing table.
type policyBench struct {
	e          *env
	sz         policySizes
	run        string
	namespaces []string
	teams      map[string]string // namespace -> its team label
	srvA, cliA *corev1.Pod       // (a): srv-a isolated by srv-a-deny; flip-* policies admit cli-a
	srvB, cliB *corev1.Pod       // (b): srv-b admits role=client pods; cli-b's label toggles
	podIPs     map[string]bool
	mu         sync.Mutex
	uids       map[string]bool
	peerGroups map[string]string // peer group id -> peer key
	rows       [][4]string
	noisy      bool // the controller was once never quiet: said once
	undone     int  // direct changes kuryr took back (yardsticks)
}

// benchPolicy: pods in labelled namespaces, a realistic mix of
// NetworkPolicies, then (c) what Neutron holds for them, (a) policy
// changes and (b) pod label changes timed until a TCP probe from a client
// pod flips, each next to the same flip made directly in Neutron, and the
// clean-up.
func benchPolicy(ctx context.Context, e *env, sz policySizes) error {
	if err := sz.check(); err != nil {
		return err
	}
	b := &policyBench{e: e, sz: sz, run: rand.String(5), teams: map[string]string{},
		podIPs: map[string]bool{}, uids: map[string]bool{}, peerGroups: map[string]string{}}
	fmt.Printf("kuryr-bench policy: %d pods in %d namespaces, %d NetworkPolicies, over %d nodes; %d samples of each change, %d direct\n\n",
		sz.pods, sz.namespaces, sz.policies, len(e.Nodes), sz.samples, sz.direct)
	if n := deleteBenchNamespaces(ctx, e); n > 0 {
		fmt.Printf("namespaces left by an earlier run: %d deleted\n", n)
	}
	defer deleteBenchNamespaces(context.Background(), e)
	if err := b.setUp(ctx); err != nil {
		return err
	}
	pa, pb, err := b.paths()
	if err != nil {
		return err
	}
	defer pa.close()
	defer pb.close()
	if err := b.createPolicies(ctx, pa, pb); err != nil {
		return err
	}
	if err := b.neutronLoad(ctx); err != nil {
		return err
	}
	if err := b.policyFlips(ctx, pa); err != nil {
		return err
	}
	if err := b.labelFlips(ctx, pb); err != nil {
		return err
	}
	if err := b.cleanUp(ctx); err != nil {
		return err
	}
	b.table()
	return nil
}

// setUp creates the namespaces and the pods (10 requests in flight) and
// waits until every pod runs with an address.
func (b *policyBench) setUp(ctx context.Context) error {
	for i := 0; i < b.sz.namespaces; i++ {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("bench-np-%s-%02d", b.run, i),
			Labels: map[string]string{names.Bench: "policy", "bench": b.run, "team": team(i)}}}
		if _, err := b.e.Kube.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
			return err
		}
		b.namespaces, b.teams[ns.Name] = append(b.namespaces, ns.Name), team(i)
	}
	pods := b.pods()
	start := time.Now()
	err := inParallel(len(pods), 10, func(i int) error {
		_, err := b.e.Kube.CoreV1().Pods(pods[i].Namespace).Create(ctx, pods[i], metav1.CreateOptions{})
		return err
	})
	if err != nil {
		return err
	}
	running, err := b.waitRunning(ctx, len(pods), 8*time.Minute)
	if err != nil {
		return err
	}
	fmt.Printf("setup: %d pods created (10 at a time) -> all Running with an address   %s\n", len(pods), secs(time.Since(start)))
	for i := range running {
		p := &running[i]
		b.podIPs[p.Status.PodIP] = true
		switch p.Name {
		case "srv-a":
			b.srvA = p
		case "cli-a":
			b.cliA = p
		case "srv-b":
			b.srvB = p
		case "cli-b":
			b.cliB = p
		}
	}
	return nil
}

// waitRunning polls until the run's n pods run with an address, and
// returns them.
func (b *policyBench) waitRunning(ctx context.Context, n int, timeout time.Duration) ([]corev1.Pod, error) {
	running := 0
	var pods []corev1.Pod
	err := poll(timeout, time.Second, func() (bool, error) {
		list, err := b.e.Kube.CoreV1().Pods(metav1.NamespaceAll).List(ctx, metav1.ListOptions{LabelSelector: "bench=" + b.run})
		if err != nil {
			return false, framework.Stop(err)
		}
		running, pods = 0, list.Items
		for _, p := range pods {
			if p.Status.Phase == corev1.PodRunning && p.Status.PodIP != "" {
				running++
			}
		}
		return running == n, nil
	}, func() error { return fmt.Errorf("%d of %d pods Running after %s", running, n, timeout) })
	if err != nil {
		return nil, err
	}
	return pods, nil
}

// cleanUp deletes every policy of the run and times until their security
// groups are gone from Neutron, and the peer groups they named but those
// of peers a live policy (not the run's) still names; then deletes the
// namespaces and waits until they (and so their pods) are gone.
func (b *policyBench) cleanUp(ctx context.Context) error {
	before, err := b.writes()
	if err != nil {
		return err
	}
	if err := b.notePeerGroups(ctx); err != nil {
		return err
	}
	start := time.Now()
	for _, ns := range b.namespaces {
		if err := b.e.Kube.NetworkingV1().NetworkPolicies(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil {
			return err
		}
	}
	left := -1
	for deadline := start.Add(3 * time.Minute); left != 0 && time.Now().Before(deadline); time.Sleep(500 * time.Millisecond) {
		if left, err = b.leftGroups(ctx); err != nil {
			return err
		}
	}
	if left != 0 {
		return fmt.Errorf("%d security groups and peer groups of the policies still in Neutron 3 minutes after the policies were deleted", left)
	}
	gone := time.Since(start)
	after, err := b.writes()
	if err != nil {
		return err
	}
	fmt.Printf("kuryr: all %d policies deleted -> their security groups and peer groups gone from Neutron   %s   (%.0f Neutron writes)\n",
		len(b.uids), secs(gone), after-before)
	b.row(fmt.Sprintf("all %d policies deleted → their groups gone from Neutron", len(b.uids)), strings.TrimSpace(secs(gone)), "", "")
	start = time.Now()
	deleteBenchNamespaces(ctx, b.e)
	fmt.Printf("kuryr: the %d namespaces deleted -> gone with their pods                    %s\n\n", len(b.namespaces), secs(time.Since(start)))
	return nil
}

// leftGroups counts the run's policy groups still in Neutron and the peer
// groups recorded that are still there though no live policy names them.
func (b *policyBench) leftGroups(ctx context.Context) (int, error) {
	c, err := b.count(ctx)
	if err != nil {
		return 0, err
	}
	live, err := b.livePeerKeys(ctx)
	if err != nil {
		return 0, err
	}
	left := c.groups
	b.mu.Lock()
	defer b.mu.Unlock()
	for id, key := range b.peerGroups {
		if c.peerIDs[id] && !live[key] {
			left++
		}
	}
	return left, nil
}

// deleteBenchNamespaces deletes every namespace labelled
// kuryr-bench=policy (this run's, or one an interrupted run left), at
// once, waits until they are gone, and says how many there were.
func deleteBenchNamespaces(ctx context.Context, e *env) int {
	list, err := e.Kube.CoreV1().Namespaces().List(ctx, metav1.ListOptions{LabelSelector: names.Bench + "=policy"})
	if err != nil {
		fmt.Println("list bench namespaces:", err)
		return 0
	}
	var wg sync.WaitGroup
	for _, ns := range list.Items {
		wg.Add(1)
		go func() { defer wg.Done(); deleteNamespace(e, ns.Name) }()
	}
	wg.Wait()
	return len(list.Items)
}

// row adds a line to the closing table.
func (b *policyBench) row(figure, kuryr, direct, target string) {
	b.rows = append(b.rows, [4]string{figure, kuryr, direct, target})
}

// table prints the figures as the README's tables.
func (b *policyBench) table() {
	fmt.Println("| figure | kuryr | Neutron alone | target |")
	fmt.Println("|---|---|---|---|")
	for _, r := range b.rows {
		fmt.Printf("| %s | %s | %s | %s |\n", r[0], r[1], r[2], r[3])
	}
}
