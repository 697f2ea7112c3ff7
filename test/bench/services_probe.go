package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/containernetworking/plugins/pkg/ns"
	corev1 "k8s.io/api/core/v1"

	"github.com/kuryr-k8s/kuryr/pkg/names"
	"github.com/kuryr-k8s/kuryr/pkg/octavia"
	"github.com/kuryr-k8s/kuryr/test/e2e/framework"
)

// Probing: every VIP is asked from inside a node's network namespace (the
// nodes reach the service subnet through their kuryr management port), a
// TCP connect + HTTP GET on port 80 and a UDP datagram on port 9090, each
// with a 300 ms timeout, every 150 ms until both got a backend's answer.
const (
	probeEvery    = 150 * time.Millisecond
	probeTimeout  = 300 * time.Millisecond
	answerTimeout = 8 * time.Minute
	benchTag      = names.Bench
)

// target is one VIP to probe, from one node.
type target struct {
	vip      string
	node     *nodeProbe
	start    time.Time // creation asked for
	answered time.Time // both ports answered; zero: never
}

type nodeProbe struct {
	netns ns.NetNS
	http  *http.Client
}

type prober struct {
	nodes []*nodeProbe
	names map[string]bool // the backends: the answers expected
}

func newProber(e *env, backends []corev1.Pod) (*prober, error) {
	pr := &prober{names: map[string]bool{}}
	for _, b := range backends {
		pr.names[b.Name] = true
	}
	for _, node := range e.Nodes {
		n, err := ns.GetNS(framework.Netns(node))
		if err != nil {
			pr.close()
			return nil, err
		}
		pr.nodes = append(pr.nodes, &nodeProbe{netns: n, http: &http.Client{Timeout: probeTimeout,
			Transport: &http.Transport{DialContext: framework.DialIn(n), DisableKeepAlives: true}}})
	}
	return pr, nil
}

func (pr *prober) close() {
	for _, n := range pr.nodes {
		n.netns.Close()
	}
}

// target: the i-th VIP is probed from node i mod the number of nodes.
func (pr *prober) target(i int, vip string, start time.Time) *target {
	return &target{vip: vip, node: pr.nodes[i%len(pr.nodes)], start: start}
}

func (pr *prober) httpAnswers(t *target) bool {
	resp, err := t.node.http.Get("http://" + net.JoinHostPort(t.vip, "80") + "/")
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 256))
	return resp.StatusCode == http.StatusOK && pr.names[strings.TrimSpace(string(body))]
}

func (pr *prober) udpAnswers(t *target) bool {
	return pr.names[askUDP(t.node.netns, net.JoinHostPort(t.vip, "9090"))]
}

// await probes every target at once until each answered on both ports (or
// answerTimeout), and returns the figures.
func (pr *prober) await(targets []*target) answers {
	ctx, cancel := context.WithTimeout(context.Background(), answerTimeout)
	defer cancel()
	var wg sync.WaitGroup
	for _, t := range targets {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var tcp, udp time.Time
			var both sync.WaitGroup
			both.Add(2)
			go func() { defer both.Done(); tcp = firstAnswer(ctx, t, pr.httpAnswers) }()
			go func() { defer both.Done(); udp = firstAnswer(ctx, t, pr.udpAnswers) }()
			both.Wait()
			if !tcp.IsZero() && !udp.IsZero() {
				t.answered = later(tcp, udp)
			}
		}()
	}
	wg.Wait()
	return answersOf(targets)
}

// firstAnswer starts a probe every probeEvery (without waiting for the
// previous one to time out) and says when the first answer came.
func firstAnswer(ctx context.Context, t *target, probe func(*target) bool) time.Time {
	tick := time.NewTicker(probeEvery)
	defer tick.Stop()
	answered := make(chan time.Time, 1)
	for {
		go func() {
			if probe(t) {
				select {
				case answered <- time.Now():
				default:
				}
			}
		}()
		select {
		case at := <-answered:
			return at
		case <-ctx.Done():
			return time.Time{}
		case <-tick.C:
		}
	}
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// answers: time from creation to answer of each target that answered, how
// many never did, and the time from the first creation until all answered.
type answers struct {
	lat     []time.Duration
	missing int
	all     time.Duration
}

func answersOf(targets []*target) answers {
	var a answers
	var first, last time.Time
	for _, t := range targets {
		if first.IsZero() || t.start.Before(first) {
			first = t.start
		}
		if t.answered.IsZero() {
			a.missing++
			continue
		}
		a.lat = append(a.lat, t.answered.Sub(t.start))
		last = later(last, t.answered)
	}
	if a.missing == 0 {
		a.all = last.Sub(first)
	}
	return a
}

// print: who (kuryr, Octavia alone) and what starts the clock.
func (a answers) print(who, what string) {
	fmt.Printf("%-14s %-16s -> VIP answers TCP and UDP      p50 %s  p99 %s  max %s\n", who+":", what,
		secs(percentile(a.lat, 50)), secs(percentile(a.lat, 99)), secs(percentile(a.lat, 100)))
	if a.missing > 0 {
		fmt.Printf("%-14s %d of %d VIPs never answered in %s\n", who+":", a.missing, a.missing+len(a.lat), answerTimeout)
		return
	}
	fmt.Printf("%-14s first %-10s -> all %d VIPs answer TCP and UDP %s\n", who+":", what, len(a.lat), secs(a.all))
}

// yardstick creates the same n load balancers directly in Octavia, at once
// (fully populated creates), probes their VIPs as kuryr's, prints the
// figures and the ratio, and deletes them.
func yardstick(ctx context.Context, e *env, oc *octavia.Client, pr *prober, backends []corev1.Pod, n int, kuryr answers) (direct changes, err error) {
	settleNeutron(ctx, e)
	defer func() { _, _, _ = deleteYardstick(context.Background(), oc) }()
	targets, err := pr.createAll(n, func(i int) (string, error) {
		lb, err := oc.CreateLoadBalancer(ctx, yardstickSpec(e, backends, i))
		if err != nil {
			return "", err
		}
		return lb.VIPAddress, nil
	})
	if err != nil {
		return direct, fmt.Errorf("yardstick: %w", err)
	}
	y := pr.await(targets)
	y.print("Octavia alone", "POST")
	compare(n, kuryr, y)
	if y.missing == 0 {
		if direct.burst, err = yardstickChange(ctx, oc, backends[0].Name); err != nil {
			return direct, err
		}
		if direct.solo, err = yardstickSolo(ctx, oc, backends[1].Name); err != nil {
			return direct, err
		}
	}
	k, took, err := deleteYardstick(ctx, oc)
	if err != nil {
		return direct, err
	}
	fmt.Printf("Octavia alone: %d cascade DELETEs -> load balancers gone %s\n\n", k, secs(took))
	return direct, nil
}

// changes: how long the endpoint changes took directly in Octavia.
type changes struct {
	burst time.Duration   // p99 of the burst
	solo  []time.Duration // each lone change
}

func yardstickSpec(e *env, backends []corev1.Pod, i int) octavia.LoadBalancerSpec {
	name := fmt.Sprintf("%s-%02d", names.Bench, i)
	s := octavia.LoadBalancerSpec{Name: name, Provider: "ovn", ProjectID: e.ProjectID,
		VIPSubnetID: e.ServiceSubnet, Tags: []string{benchTag}}
	for _, l := range []struct {
		proto string
		port  int32
		to    int32
	}{{"TCP", 80, 8080}, {"UDP", 9090, 9090}} {
		ln := fmt.Sprintf("%s:%s:%d", name, l.proto, l.port)
		pool := octavia.PoolSpec{Name: ln, Protocol: l.proto, Algorithm: "SOURCE_IP_PORT"}
		for _, b := range backends {
			pool.Members = append(pool.Members, octavia.MemberSpec{Name: b.Name, Address: b.Status.PodIP, Port: l.to, SubnetID: e.PodSubnet})
		}
		s.Listeners = append(s.Listeners, octavia.ListenerSpec{Name: ln, Protocol: l.proto, Port: l.port, Pool: pool})
	}
	return s
}

// deleteYardstick deletes (cascade, at once) every load balancer tagged
// kuryr-bench, and returns how many there were and how long they took to
// be gone.
func deleteYardstick(ctx context.Context, oc *octavia.Client) (int, time.Duration, error) {
	start, found := time.Now(), -1
	for deadline := start.Add(3 * time.Minute); time.Now().Before(deadline); time.Sleep(500 * time.Millisecond) {
		lbs, err := oc.FindLoadBalancers(ctx, []string{benchTag})
		if err != nil {
			return found, 0, err
		}
		if found < 0 {
			found = len(lbs)
		}
		if len(lbs) == 0 {
			return found, time.Since(start), nil
		}
		var wg sync.WaitGroup
		for _, lb := range lbs {
			if lb.ProvisioningStatus != "PENDING_DELETE" {
				wg.Add(1)
				// A busy (PENDING_*) one refuses: asked again next round.
				go func() { defer wg.Done(); _ = oc.DeleteLoadBalancer(ctx, lb.ID) }()
			}
		}
		wg.Wait()
	}
	return found, 0, errors.New("yardstick load balancers still in Octavia after 3 minutes")
}

// createAll runs the n creations at once, each returning the address to
// probe, and returns their probe targets timed from each creation's start.
func (pr *prober) createAll(n int, create func(i int) (string, error)) ([]*target, error) {
	targets := make([]*target, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range targets {
		wg.Add(1)
		go func() {
			defer wg.Done()
			start := time.Now()
			addr, err := create(i)
			if errs[i] = err; err == nil {
				targets[i] = pr.target(i, addr, start)
			}
		}()
	}
	wg.Wait()
	return targets, errors.Join(errs...)
}
