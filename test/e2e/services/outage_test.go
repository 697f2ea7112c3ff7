//go:build e2e

package services

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	neutronports "github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
	"github.com/gophercloud/gophercloud/v2/pagination"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kuryr-k8s/kuryr/pkg/octavia"
	"github.com/kuryr-k8s/kuryr/test/e2e/framework"
)

// outage is how long Neutron and Octavia stay frozen: long enough for the
// objects made meanwhile to back off past 10 s, short of the local cloud's
// hang detection (4 missed probes 10 s apart), which would restart them.
const outage = 25 * time.Second

// TestOpenStackOutage: neutron-server and octavia-api are frozen (alive,
// answering nothing, as when every worker blocks) while pods and Services
// are created; once they answer again, kuryr retries what waited at once
// instead of at the end of a backoff grown during the outage: every new
// pod's port is created in Neutron within 20 s of Neutron answering a
// request again (its own backlog included), every Service's load balancer in Octavia within 10 s of
// Octavia answering again, and they are Ready as fast as Neutron and
// Octavia make them.
func TestOpenStackOutage(t *testing.T) {
	c, k, ns := framework.Setup(t, "e2e-outage")
	createBackends(t, c, ns, "before", 0, 2)
	createService(t, c, webService(ns, "before", "before"))
	waitKLB(t, k, ns, "before", 2, 3*time.Minute)

	frozen := []string{"neutron-server", "octavia-api"}
	for _, s := range frozen {
		k.Ctl(t, "freeze", s)
	}
	thawed := false
	thaw := func() {
		if !thawed {
			thawed = true
			for _, s := range frozen {
				k.Ctl(t, "thaw", s)
			}
		}
	}
	t.Cleanup(thaw)
	start := time.Now()
	var pods []*corev1.Pod
	for i := range 6 {
		p, err := c.Kube.CoreV1().Pods(ns).Create(context.Background(),
			backend(c, ns, fmt.Sprintf("during-%d", i), c.Nodes[i%len(c.Nodes)], "during"), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		pods = append(pods, p)
	}
	var services []string
	for i := range 3 {
		name := fmt.Sprintf("during-%d", i)
		createService(t, c, webService(ns, name, "during"))
		services = append(services, name)
	}
	time.Sleep(outage - time.Since(start))
	thaw()
	thawedAt := time.Now()
	t.Logf("neutron-server and octavia-api frozen for %s while 6 pods and 3 Services were created", time.Since(start).Round(time.Second))
	// "Answered again" is when each first answers a request, not the thaw:
	// a thawed service first works off what queued up while it was frozen
	// (everyone's requests, its agents'), which is its own time.
	back, backOctavia := answersAgain(t, c)
	t.Logf("after the thaw Neutron answered again in %s, Octavia in %s",
		back.Sub(thawedAt).Round(100*time.Millisecond), backOctavia.Sub(thawedAt).Round(100*time.Millisecond))

	kps := k.WaitKuryrPorts(t, pods, time.Minute)
	ports := time.Since(back)
	var lastPort time.Duration // the last Neutron create, after the thaw
	for name, kp := range kps {
		vif, _ := kp.Status.DefaultVIF()
		port, err := neutronports.Get(context.Background(), c.OS.Network, vif.PortID).Extract()
		if err != nil {
			t.Fatalf("port of %s: %v", name, err)
		}
		if port.CreatedAt.IsZero() {
			t.Fatalf("port %s of %s has no created_at", port.ID, name)
		}
		lastPort = max(lastPort, port.CreatedAt.Sub(back))
	}
	var latest time.Duration // the last Octavia create, after the thaw
	for _, s := range services {
		klb := waitKLB(t, k, ns, s, 6, 3*time.Minute)
		lb, err := octavia.New(c.OS.LoadBalancer).GetLoadBalancer(context.Background(), klb.Status.LoadBalancer.ID)
		if err != nil || lb == nil {
			t.Fatalf("load balancer of %s: %v", s, err)
		}
		latest = max(latest, lb.CreatedAt.Sub(backOctavia))
	}
	lbs := time.Since(back)
	ready := c.WaitReady(t, pods, 3*time.Minute)
	t.Logf("after they answered again: the 6 KuryrPorts carried their ports in %s, the 3 load balancers were Ready in %s, the pods in %s",
		ports.Round(100*time.Millisecond), lbs.Round(100*time.Millisecond), time.Since(back).Round(100*time.Millisecond))
	// Like Octavia's below: kuryr's part is to ask again at once; the time
	// Neutron then takes to make and bind the ports is its own (≈ 1 s per
	// port on a busy 2-core machine), so it is logged, not bounded. Neutron
	// stores whole seconds, truncated: never later than the real time.
	t.Logf("the last of the 6 ports was created in Neutron %s after it answered again", lastPort.Round(time.Second))
	// The bound tells a retry at once from one at the end of a backoff
	// (up to 2 min): a thawed 2-core Neutron has been seen taking 12 s to
	// work off its backlog and make 6 ports.
	if lastPort > 20*time.Second {
		t.Errorf("the ports waiting on Neutron were created %s after it answered again, want at most 20 s", lastPort)
	}
	// Octavia's clock has whole seconds: the last load balancer was
	// created (what takes Octavia's own time follows) within 10 s.
	t.Logf("the last of the 3 load balancers was created in Octavia %s after it answered again", latest.Round(time.Second))
	if latest > 11*time.Second {
		t.Errorf("the load balancers waiting on Octavia were created %s after it answered again, want at most 10 s", latest)
	}
	svc, err := c.Kube.CoreV1().Services(ns).Get(context.Background(), services[0], metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cl := clientPod(t, c, ns, "client", c.Nodes[0])
	reachesAll(t, cl, httpCmd(svc.Spec.ClusterIP, 80), podNames(ready), time.Minute)
	if hung := k.Ctl(t, "hangs"); strings.Contains(hung, "neutron-server") || strings.Contains(hung, "octavia-api") {
		t.Errorf("a frozen service was restarted as hung, the test froze it too long: %s", hung)
	}
}

// answersAgain polls Neutron and Octavia (one cheap list each, every
// 100 ms) until each has answered once, and returns when each did.
func answersAgain(t *testing.T, c *framework.Cloud) (neutronAt, octaviaAt time.Time) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	oc := octavia.New(c.OS.LoadBalancer)
	for neutronAt.IsZero() || octaviaAt.IsZero() {
		if ctx.Err() != nil {
			t.Fatalf("Neutron (answered: %v) or Octavia (answered: %v) never answered after the thaw", !neutronAt.IsZero(), !octaviaAt.IsZero())
		}
		if neutronAt.IsZero() {
			err := neutronports.List(c.OS.Network, neutronports.ListOpts{Limit: 1}).EachPage(ctx,
				func(context.Context, pagination.Page) (bool, error) { return false, nil })
			if err == nil {
				neutronAt = time.Now()
			}
		}
		if octaviaAt.IsZero() {
			if _, err := oc.FindLoadBalancers(ctx, []string{"e2e-outage-probe"}); err == nil {
				octaviaAt = time.Now()
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	return neutronAt, octaviaAt
}
