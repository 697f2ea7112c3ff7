//go:build e2e

package daemon

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kuryr-k8s/kuryr/test/e2e/framework"
)

// supervisedPid is the pid of a supervised process of the local cloud, ""
// while it is not running (between a crash and its restart).
func supervisedPid(t *testing.T, name string) string {
	t.Helper()
	out, err := exec.Command("bash", framework.CtlPath(t), "pid", name).Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}

// TestPodsSurviveVswitchdRestart: ovs-vswitchd of a node dies (SIGKILL);
// its supervisor restarts it, and the node's pods regain their network
// (pod to pod across nodes, node to pod through the management port, which
// kuryr-daemon plugs again), and new pods on that node start.
func TestPodsSurviveVswitchdRestart(t *testing.T) {
	c, k, ns := framework.Setup(t, "e2e-vswitchd")
	if len(c.Nodes) < 2 {
		t.Fatal("needs two nodes")
	}
	pods := c.WaitReady(t, c.CreatePods(t, ns, "p", 2), 2*time.Minute)
	a, b := pods[0], pods[1] // b on the second node
	victim := b.Spec.NodeName + "-vswitchd"
	before := supervisedPid(t, victim)
	k.Crash(t, victim)
	killed := time.Now()
	framework.Eventually(t, time.Minute, 250*time.Millisecond, victim+" restarted", func() (bool, error) {
		pid := supervisedPid(t, victim)
		return pid != "" && pid != before, fmt.Errorf("pid %q", pid)
	})
	framework.Eventually(t, time.Minute, time.Second, a.Name+" reaches "+b.Name+" again", func() (bool, error) {
		out, err := framework.Exec(t, a, "ping", "-c", "1", "-W", "1", b.Status.PodIP)
		return err == nil, fmt.Errorf("%v: %s", err, out)
	})
	t.Logf("pod to pod across nodes again %s after ovs-vswitchd was killed", time.Since(killed).Round(time.Millisecond))
	nodeNS := framework.OpenNetns(t, c.NodeNetns(b.Spec.NodeName))
	framework.Eventually(t, time.Minute, time.Second, "node reaches its pod again", func() (bool, error) {
		err := framework.Ping(nodeNS, b.Status.PodIP, 1)
		return err == nil, err
	})
	t.Logf("node to pod again %s after ovs-vswitchd was killed", time.Since(killed).Round(time.Millisecond))
	more := c.TestPod(ns, "after", b.Spec.NodeName)
	created, err := c.Kube.CoreV1().Pods(ns).Create(context.Background(), more, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c.WaitReady(t, append(pods, created), 2*time.Minute)
}

// TestConntrackTupleReuse connects to a pod again and again from the same
// source port, closing each connection with a reset: the pattern that made
// Debian's ovs-vswitchd 3.1.0 abort in its userspace conntrack (OVN commits
// every connection through a security group with an all-zero SNAT, and a
// new SYN on a just-closed NATed tuple hit the un-NAT entry; the local
// cloud then ran a patched build). Open vSwitch 3.5, which the local cloud
// runs unpatched, survives it: every connection succeeds.
func TestConntrackTupleReuse(t *testing.T) {
	c, _, ns := framework.Setup(t, "e2e-ct")
	server := c.WaitReady(t, c.CreatePods(t, ns, "server", 1), 2*time.Minute)[0]
	node := server.Spec.NodeName
	port := c.CreateBoundPort(t, node, framework.Name("ct-client"))
	client := c.PlugPort(t, node, port, framework.Name("ct"))
	c.WaitPortActive(t, port.ID)
	before := supervisedPid(t, node+"-vswitchd")
	for i := 0; i < 6; i++ {
		got, err := framework.DialReusing(client.Netns, 40123, server.Status.PodIP+":8080")
		if err != nil || !strings.Contains(got, server.Name) {
			t.Errorf("connection %d from the same source port: %v %q", i, err, got)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if after := supervisedPid(t, node+"-vswitchd"); after != before {
		t.Errorf("ovs-vswitchd of %s died (pid %s, now %s): see _output/logs/%s-vswitchd.log", node, before, after, node)
	}
}
