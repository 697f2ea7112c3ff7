//go:build e2e

package services

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/containernetworking/plugins/pkg/ns"
	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kuryrv1 "github.com/kuryr-k8s/kuryr/api/v1"
	"github.com/kuryr-k8s/kuryr/test/e2e/framework"
)

// TestRefusalsOutliveRefusePorts: a ClusterIP without an endpoint is
// refused at once, and stays refused after the refuse port that answered
// for it is gone (as when its node is removed or replaced): every node's
// refuse port is deleted in turn, and put back by kuryr-controller, and
// the client is refused at once throughout. The router keeps the MAC that
// first answered for the address for good; were that one port's, the
// address would go silent.
func TestRefusalsOutliveRefusePorts(t *testing.T) {
	c, k, ns := framework.Setup(t, "e2e-refuse")
	cl := clientPod(t, c, ns, "client", c.Nodes[0])
	netns, err := framework.PodNetns(cl.Status.PodIP)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { netns.Close() })
	svc := createService(t, c, webService(ns, "nobody", "nobody")) // selects no pod
	addr := svc.Spec.ClusterIP + ":80"
	refusedAtOnce(t, netns, addr, "before any refuse port goes")
	for _, node := range c.Nodes {
		gone, err := refusePortOf(c, node)
		if err != nil {
			t.Fatal(err)
		}
		if err := ports.Delete(context.Background(), c.OS.Network, gone.PortID).ExtractErr(); err != nil &&
			!gophercloud.ResponseCodeIs(err, 404) {
			t.Fatalf("delete %s's refuse port %s: %v", node, gone.PortID, err)
		}
		refusedAtOnce(t, netns, addr, "with "+node+"'s refuse port "+gone.PortID+" deleted")
		// The controller checks a node's ports at its start (and every 5
		// minutes): a restart puts the port back now.
		k.Controller(t, "restart")
		var back kuryrv1.NodePort
		framework.Eventually(t, 2*time.Minute, time.Second, node+"'s refuse port put back", func() (bool, error) {
			var err error
			if back, err = refusePortOf(c, node); err != nil {
				return false, err
			}
			return back.PortID != gone.PortID, fmt.Errorf("the annotation still names %s", gone.PortID)
		})
		c.WaitPortActive(t, back.PortID)
		t.Logf("%s's refuse port %s replaced by %s (answering as %s); the ClusterIP refused throughout",
			node, gone.PortID, back.PortID, back.AnswerMAC)
	}
	refusedAtOnce(t, netns, addr, "with every node's first refuse port gone")
}

// refusePortOf reads the node's refuse port from its annotation.
func refusePortOf(c *framework.Cloud, node string) (kuryrv1.NodePort, error) {
	var np kuryrv1.NodePort
	n, err := c.Kube.CoreV1().Nodes().Get(context.Background(), node, metav1.GetOptions{})
	if err != nil {
		return np, err
	}
	if err := json.Unmarshal([]byte(n.Annotations[kuryrv1.RefusePortAnnotation]), &np); err != nil {
		return np, fmt.Errorf("node %s: refuse annotation %q: %w", node, n.Annotations[kuryrv1.RefusePortAnnotation], err)
	}
	return np, nil
}

// refusedAtOnce: within 10 s (the switch forgetting a deleted port; a
// ClusterIP the router bound to a gone port's own MAC stays silent for
// good), a connection to addr from inside n is refused in under a second,
// three times in a row.
func refusedAtOnce(t *testing.T, n ns.NetNS, addr, when string) {
	t.Helper()
	framework.Eventually(t, 10*time.Second, 200*time.Millisecond, "connections to "+addr+" refused at once "+when, func() (bool, error) {
		for i := 0; i < 3; i++ {
			start := time.Now()
			_, err := askHTTP(n, addr, time.Second)
			if !errors.Is(err, syscall.ECONNREFUSED) {
				return false, fmt.Errorf("attempt %d after %s: %v", i+1, time.Since(start).Round(time.Millisecond), err)
			}
		}
		return true, nil
	})
}
