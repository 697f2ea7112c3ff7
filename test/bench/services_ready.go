package main

import (
	"context"
	"fmt"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/containernetworking/plugins/pkg/ns"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kuryrv1 "github.com/kuryr-k8s/kuryr/api/v1"
	"github.com/kuryr-k8s/kuryr/pkg/octavia"
	"github.com/kuryr-k8s/kuryr/test/e2e/framework"
)

// target ratio of kuryr's time to Octavia's own for the same load
// balancers (issue 19: Service convergence).
const convergenceTarget = 1.2

// compare prints kuryr's figures against Octavia's own for n Services:
// p50, p99 and until all answered, and the verdict on the slowest.
func compare(n int, kuryr, direct answers) {
	if kuryr.missing > 0 || direct.missing > 0 {
		return
	}
	ratio := func(a, b time.Duration) float64 { return a.Seconds() / b.Seconds() }
	r := ratio(kuryr.all, direct.all)
	fmt.Printf("ratio kuryr / Octavia alone (%d Service(s)): p50 %.2f x  p99 %.2f x  all %.2f x\n", n,
		ratio(percentile(kuryr.lat, 50), percentile(direct.lat, 50)), ratio(percentile(kuryr.lat, 99), percentile(direct.lat, 99)), r)
	fmt.Printf("target: all answer within %.1f x Octavia's own time (%s): %s (%.2f x)\n", convergenceTarget,
		secs(time.Duration(float64(direct.all)*convergenceTarget)), verdict(r <= convergenceTarget), r)
}

// oneService measures a lone Service created through kuryr against a lone
// load balancer created directly in Octavia, one after the other, each
// deleted afterwards.
func oneService(ctx context.Context, e *env, oc *octavia.Client, pr *prober, backends []corev1.Pod, ns string) error {
	settleNeutron(ctx, e)
	targets, err := pr.createAll(1, func(int) (string, error) {
		s := service(0)
		s.Name = "one"
		created, err := e.Kube.CoreV1().Services(ns).Create(ctx, s, metav1.CreateOptions{})
		if err != nil {
			return "", err
		}
		return created.Spec.ClusterIP, nil
	})
	if err != nil {
		return err
	}
	kuryr := pr.await(targets)
	kuryr.print("kuryr", "Service created")
	if err := e.Kube.CoreV1().Services(ns).Delete(ctx, "one", metav1.DeleteOptions{}); err != nil {
		return err
	}
	if err := waitGone(ctx, e, ns, "one"); err != nil {
		return err
	}
	settleNeutron(ctx, e)
	targets, err = pr.createAll(1, func(i int) (string, error) {
		lb, err := oc.CreateLoadBalancer(ctx, yardstickSpec(e, backends, i))
		if err != nil {
			return "", err
		}
		return lb.VIPAddress, nil
	})
	if err != nil {
		return fmt.Errorf("yardstick: %w", err)
	}
	direct := pr.await(targets)
	direct.print("Octavia alone", "POST")
	compare(1, kuryr, direct)
	if _, _, err := deleteYardstick(ctx, oc); err != nil {
		return err
	}
	fmt.Println()
	return nil
}

// waitGone waits until the Service's KuryrLoadBalancer is gone (its load
// balancer deleted in Octavia).
func waitGone(ctx context.Context, e *env, ns, name string) error {
	return poll(2*time.Minute, 250*time.Millisecond, func() (bool, error) {
		var k kuryrv1.KuryrLoadBalancer
		err := e.kuryr.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &k)
		return client.IgnoreNotFound(err) == nil && err != nil, nil
	}, func() error {
		return fmt.Errorf("KuryrLoadBalancer %s/%s still there 2 minutes after its Service was deleted", ns, name)
	})
}

// backendReady adds a backend to the n Services and times, for each, from
// the moment the pod is seen Ready until it answers through the Service's
// VIP (UDP from a new source port each time: the ovn provider balances by
// source address and port, so a probe lands on it one time in members).
func backendReady(ctx context.Context, e *env, pr *prober, ns string, klbs []kuryrv1.KuryrLoadBalancer, direct time.Duration) error {
	const name = "web-ready"
	if _, err := e.Kube.CoreV1().Pods(ns).Create(ctx, backendPod(e, name, e.Nodes[0]), metav1.CreateOptions{}); err != nil {
		return err
	}
	readyAt, err := waitPodReady(ctx, e, ns, name)
	if err != nil {
		return err
	}
	lat := make([]time.Duration, len(klbs))
	var wg sync.WaitGroup
	for i, k := range klbs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			lat[i] = -1
			node := pr.nodes[i%len(pr.nodes)]
			for time.Since(readyAt) < 2*time.Minute {
				if askUDP(node.netns, net.JoinHostPort(k.Spec.IP, "9090")) == name {
					lat[i] = time.Since(readyAt)
					return
				}
				time.Sleep(probeEvery)
			}
		}()
	}
	wg.Wait()
	for _, d := range lat {
		if d < 0 {
			return fmt.Errorf("the new backend never answered through some VIPs within 2 minutes of being Ready")
		}
	}
	fmt.Printf("kuryr: backend Ready -> it answers through the VIPs of the %d Services   p50 %s  p99 %s  max %s\n",
		len(klbs), secs(percentile(lat, 50)), secs(percentile(lat, 99)), secs(percentile(lat, 100)))
	if direct > 0 {
		fmt.Printf("Octavia alone: a member change of the %d load balancers at once -> in both pools   p99 %s (kuryr %.2f x)\n",
			len(klbs), secs(direct), percentile(lat, 99).Seconds()/direct.Seconds())
	}
	fmt.Println()
	return nil
}

// waitPodReady polls the pod every 100 ms and says when it was first seen
// Ready.
func waitPodReady(ctx context.Context, e *env, ns, name string) (time.Time, error) {
	var at time.Time
	err := poll(3*time.Minute, 100*time.Millisecond, func() (bool, error) {
		p, err := e.Kube.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err == nil && framework.IsReady(p) {
			at = time.Now()
		}
		return !at.IsZero(), nil
	}, func() error { return fmt.Errorf("pod %s/%s not Ready after 3 minutes", ns, name) })
	return at, err
}

// askUDP sends a datagram from inside n, from a new source port, and
// returns the answer ("" when none came).
func askUDP(n ns.NetNS, addr string) string {
	c, err := framework.DialIn(n)(context.Background(), "udp", addr)
	if err != nil {
		return ""
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(probeTimeout))
	if _, err := c.Write([]byte("who?")); err != nil {
		return ""
	}
	buf := make([]byte, 256)
	k, _ := c.Read(buf)
	return strings.TrimSpace(string(buf[:k]))
}
