//go:build e2e

package services

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/containernetworking/plugins/pkg/ns"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kuryrv1 "github.com/kuryr-k8s/kuryr/api/v1"
	"github.com/kuryr-k8s/kuryr/test/e2e/framework"
)

// maxAfterReady is how soon after its load balancer serves a Service the
// clients that tried it before must be answered.
const maxAfterReady = 2 * time.Second

// TestFirstConnections: clients that reach for a Service before its load
// balancer serves it are answered within 2 s of the load balancer becoming
// ready: a TCP client retrying with a long connect timeout (as redis-cli
// in a loop does), and a UDP client sending from one fixed source port
// (a DNS-like client). Before that, a connection is refused at once
// rather than left unanswered. A UDP client of a DNS-like Service follows
// its backend replaced by another (a rolling update) within 2 s of the
// load balancer letting the old one go.
func TestFirstConnections(t *testing.T) {
	c, k, ns := framework.Setup(t, "e2e-first")
	createBackends(t, c, ns, "web", 0, 1)
	cl := clientPod(t, c, ns, "client", c.Nodes[len(c.Nodes)-1])
	netns, err := framework.PodNetns(cl.Status.PodIP)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { netns.Close() })

	svc := createService(t, c, webService(ns, "web", "web",
		corev1.ServicePort{Name: "http", Port: 80, TargetPort: intstr.FromString("web")},
		corev1.ServicePort{Name: "echo", Port: 9090, Protocol: corev1.ProtocolUDP, TargetPort: intstr.FromString("echo")}))
	created := time.Now()
	vip := svc.Spec.ClusterIP
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	tcp := startTCPClient(ctx, t, netns, vip+":80")
	udp := startUDPClient(ctx, t, netns, vip+":9090", 35353)
	ready := waitReadyTime(t, k, ns, "web", time.Minute)
	tcpAt, udpAt := tcp.first(t, 30*time.Second), udp.first(t, 30*time.Second)
	t.Logf("Service created; its load balancer ready after %s; first TCP answer %s and first UDP answer (fixed source port) %s after that",
		ready.Sub(created).Round(time.Millisecond), tcpAt.Sub(ready).Round(time.Millisecond), udpAt.Sub(ready).Round(time.Millisecond))
	nOther, lastOther := tcp.other()
	t.Logf("before it: %d TCP attempts refused at once, %d left unanswered, %d failed otherwise (last: %v)",
		tcp.refused(), tcp.silent(), nOther, lastOther)
	for what, at := range map[string]time.Time{"TCP": tcpAt, "UDP": udpAt} {
		if d := at.Sub(ready); d > maxAfterReady {
			t.Errorf("%s client answered %s after the load balancer was ready, want within %s", what, d.Round(time.Millisecond), maxAfterReady)
		}
	}
	if tcp.silent() > 0 {
		t.Errorf("%d TCP attempts before the load balancer went unanswered, want them refused at once", tcp.silent())
	}

	// A DNS-like Service (UDP only) whose backend is replaced: its client,
	// still on one source port, reaches the new one.
	dns := createBackends(t, c, ns, "dns", 0, 1)
	createService(t, c, webService(ns, "dns", "dns",
		corev1.ServicePort{Name: "echo", Port: 53, Protocol: corev1.ProtocolUDP, TargetPort: intstr.FromString("echo")}))
	waitReadyTime(t, k, ns, "dns", time.Minute)
	var dnsSvc corev1.Service
	if err := k.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "dns"}, &dnsSvc); err != nil {
		t.Fatal(err)
	}
	udp = startUDPClient(ctx, t, netns, dnsSvc.Spec.ClusterIP+":53", 35354)
	udp.answeredBy(t, dns[0].Name, time.Minute)
	// A rolling update: the new backend serves before the old one goes.
	next := createBackends(t, c, ns, "dns", 1, 1)[0]
	waitKLB(t, k, ns, "dns", 2, time.Minute)
	replaced := time.Now()
	deletePod(t, c, dns[0])
	served := waitMembers(t, k, ns, "dns", 1, time.Minute)
	at := udp.answeredBy(t, next.Name, time.Minute)
	t.Logf("UDP client (fixed source port) answered by the replacement %s after the old backend was deleted, %s after the load balancer let it go",
		at.Sub(replaced).Round(time.Millisecond), at.Sub(served).Round(time.Millisecond))
	if d := at.Sub(served); d > maxAfterReady {
		t.Errorf("UDP client reached the replacement %s after the load balancer let the old backend go, want within %s",
			d.Round(time.Millisecond), maxAfterReady)
	}
}

// waitMembers polls the KuryrLoadBalancer every 100 ms and returns when it
// was first seen Ready with n members.
func waitMembers(t *testing.T, k *framework.Kuryr, ns, name string, n int, timeout time.Duration) time.Time {
	t.Helper()
	var at time.Time
	framework.Eventually(t, timeout, 100*time.Millisecond, fmt.Sprintf("the load balancer ready with %d members", n), func() (bool, error) {
		var klb kuryrv1.KuryrLoadBalancer
		if err := k.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &klb); err != nil {
			return false, err
		}
		if meta.IsStatusConditionTrue(klb.Status.Conditions, kuryrv1.ConditionReady) && klb.Status.Members == n {
			at = time.Now()
			return true, nil
		}
		return false, fmt.Errorf("%d members", klb.Status.Members)
	})
	return at
}

// waitReadyTime polls the KuryrLoadBalancer every 100 ms and returns when
// it was first seen Ready with a member.
func waitReadyTime(t *testing.T, k *framework.Kuryr, ns, name string, timeout time.Duration) time.Time {
	t.Helper()
	var at time.Time
	framework.Eventually(t, timeout, 100*time.Millisecond, "the load balancer ready", func() (bool, error) {
		var klb kuryrv1.KuryrLoadBalancer
		if err := k.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &klb); err != nil {
			return false, err
		}
		if meta.IsStatusConditionTrue(klb.Status.Conditions, kuryrv1.ConditionReady) && klb.Status.Members > 0 {
			at = time.Now()
			return true, nil
		}
		return false, fmt.Errorf("not ready")
	})
	return at
}

func deletePod(t *testing.T, c *framework.Cloud, p *corev1.Pod) {
	t.Helper()
	if err := c.Kube.CoreV1().Pods(p.Namespace).Delete(context.Background(), p.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
}

// prober records what a client saw.
type prober struct {
	mu        sync.Mutex
	answers   []answer
	nRefused  int
	nSilent   int
	nOther    int
	lastOther error
	firstSeen chan struct{}
	once      sync.Once
}

type answer struct {
	at   time.Time
	from string
}

func newProber() *prober { return &prober{firstSeen: make(chan struct{})} }

func (p *prober) answered(from string) {
	p.mu.Lock()
	p.answers = append(p.answers, answer{time.Now(), from})
	p.mu.Unlock()
	p.once.Do(func() { close(p.firstSeen) })
}

func (p *prober) first(t *testing.T, timeout time.Duration) time.Time {
	t.Helper()
	select {
	case <-p.firstSeen:
	case <-time.After(timeout):
		t.Fatalf("no answer within %s", timeout)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.answers[0].at
}

func (p *prober) answeredBy(t *testing.T, from string, timeout time.Duration) time.Time {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		p.mu.Lock()
		for _, a := range p.answers {
			if a.from == from {
				p.mu.Unlock()
				return a.at
			}
		}
		p.mu.Unlock()
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("no answer from %s within %s", from, timeout)
	return time.Time{}
}

func (p *prober) refused() int { p.mu.Lock(); defer p.mu.Unlock(); return p.nRefused }
func (p *prober) silent() int  { p.mu.Lock(); defer p.mu.Unlock(); return p.nSilent }

// other: the attempts that failed at once but not refused, and the last
// such error.
func (p *prober) other() (int, error) { p.mu.Lock(); defer p.mu.Unlock(); return p.nOther, p.lastOther }

// startTCPClient asks for / at addr until it is answered once: each
// attempt a new connection with a long connect timeout (the kernel's
// retransmissions do the waiting), 1 s between attempts that failed.
func startTCPClient(ctx context.Context, t *testing.T, n ns.NetNS, addr string) *prober {
	p := newProber()
	go func() {
		for ctx.Err() == nil {
			start := time.Now()
			body, err := askHTTP(n, addr, 60*time.Second)
			switch {
			case err == nil:
				p.answered(strings.TrimSpace(body))
				return
			case errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.EHOSTUNREACH):
				p.mu.Lock()
				p.nRefused++
				p.mu.Unlock()
			case time.Since(start) > 2*time.Second:
				p.mu.Lock()
				p.nSilent++
				p.mu.Unlock()
			default:
				p.mu.Lock()
				p.nOther, p.lastOther = p.nOther+1, err
				p.mu.Unlock()
			}
			time.Sleep(time.Second)
		}
	}()
	return p
}

// askHTTP sends GET / from inside n and returns the body's last line.
func askHTTP(n ns.NetNS, addr string, timeout time.Duration) (string, error) {
	var out string
	err := n.Do(func(ns.NetNS) error {
		c, err := net.DialTimeout("tcp", addr, timeout)
		if err != nil {
			return err
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(5 * time.Second))
		if _, err := c.Write([]byte("GET / HTTP/1.0\r\n\r\n")); err != nil {
			return err
		}
		raw, err := io.ReadAll(c)
		if len(raw) == 0 {
			return fmt.Errorf("empty answer: %w", err)
		}
		lines := strings.Split(strings.TrimSpace(string(raw)), "\n")
		out = lines[len(lines)-1]
		return nil
	})
	return out, err
}

// startUDPClient sends a datagram every 200 ms from one source port to
// addr and records the answers (the backends answer their names).
func startUDPClient(ctx context.Context, t *testing.T, n ns.NetNS, addr string, sport int) *prober {
	t.Helper()
	var conn *net.UDPConn
	err := n.Do(func(ns.NetNS) error {
		raddr, err := net.ResolveUDPAddr("udp", addr)
		if err != nil {
			return err
		}
		conn, err = net.DialUDP("udp", &net.UDPAddr{Port: sport}, raddr)
		return err
	})
	if err != nil {
		t.Fatalf("UDP client: %v", err)
	}
	t.Cleanup(func() { conn.Close() })
	p := newProber()
	go func() {
		buf := make([]byte, 512)
		for ctx.Err() == nil {
			_, _ = conn.Write([]byte("ping"))
			_ = conn.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
			k, err := conn.Read(buf)
			var ne net.Error
			switch {
			case err == nil:
				p.answered(strings.TrimSpace(string(buf[:k])))
				time.Sleep(200 * time.Millisecond)
			case !errors.As(err, &ne) || !ne.Timeout(): // refused: an ICMP port unreachable
				time.Sleep(200 * time.Millisecond)
			}
		}
	}()
	return p
}
