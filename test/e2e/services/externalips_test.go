//go:build e2e

package services

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/containernetworking/plugins/pkg/ns"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/floatingips"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kuryrv1 "github.com/kuryr-k8s/kuryr/api/v1"
	"github.com/kuryr-k8s/kuryr/test/e2e/framework"
)

// TestExternalIPs: a ClusterIP Service's externalIPs (the design
// documents' External IP). An address of the external network that no
// floating IP has yet is allocated by kuryr and answers from the outside
// network; one kuryr cannot serve gets a Warning saying why; a floating IP
// the project had already is associated instead, and the one kuryr
// allocated is released; removing the external IPs takes the user's
// address off the VIP without deleting it.
func TestExternalIPs(t *testing.T) {
	c, k, ns := framework.Setup(t, "e2e-extip")
	backends := createBackends(t, c, ns, "web", 0, 2)
	// Outside public-subnet's allocation pool (.10–.250): no floating IP or
	// router gateway made earlier in the run can hold it.
	allocated, elsewhere := "172.24.4.251", "198.51.100.7"
	s := webService(ns, "web", "web")
	s.Spec.ExternalIPs = []string{allocated, elsewhere}
	createService(t, c, s)
	st := waitExternal(t, k, ns, allocated, 1)
	if st.FloatingIP.AllocMethod != "pool" || !strings.Contains(st.ExternalIPsNotServed[0], elsewhere+": neither a floating IP") {
		t.Fatalf("floating IP %+v, not served %q: want %s allocated by kuryr and %s not served", st.FloatingIP,
			st.ExternalIPsNotServed, allocated, elsewhere)
	}
	t.Logf("not served, and why: %s", st.ExternalIPsNotServed[0])
	waitWarning(t, c, ns, "ExternalIPNotServed", elsewhere)
	outside := framework.OpenNetns(t, c.OutsideNetns)
	framework.Eventually(t, 2*time.Minute, time.Second, "every backend through "+allocated+" from outside", func() (bool, error) {
		seen := map[string]bool{}
		for range 16 {
			if a := askOutside(outside, allocated); a != "" {
				seen[a] = true
			}
		}
		return len(seen) == len(backends), fmt.Errorf("reached %v", seen)
	})

	// The project's own floating IP instead: associated; kuryr's released.
	user, err := floatingips.Create(context.Background(), c.OS.Network, floatingips.CreateOpts{
		FloatingNetworkID: c.PublicNet, ProjectID: c.ProjectID, Description: "e2e: the user's"}).Extract()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = floatingips.Delete(context.Background(), c.OS.Network, user.ID).ExtractErr() })
	setExternalIPs(t, c, ns, "web", user.FloatingIP)
	if st := waitExternal(t, k, ns, user.FloatingIP, 0); st.FloatingIP.AllocMethod != "user" {
		t.Fatalf("floating IP %+v, want the user's", st.FloatingIP)
	}
	if a := askOutsideEventually(t, outside, user.FloatingIP); a == "" {
		t.Fatalf("no answer through %s", user.FloatingIP)
	}
	framework.Eventually(t, time.Minute, time.Second, allocated+" released", func() (bool, error) {
		got, err := floatingips.List(c.OS.Network, floatingips.ListOpts{FloatingIP: allocated}).AllPages(context.Background())
		if err != nil {
			return false, err
		}
		all, _ := floatingips.ExtractFloatingIPs(got)
		return len(all) == 0, fmt.Errorf("%d floating IPs %s left", len(all), allocated)
	})

	// Removed: the user's floating IP leaves the VIP and stays.
	setExternalIPs(t, c, ns, "web")
	framework.Eventually(t, time.Minute, time.Second, "the user's floating IP off the VIP, kept", func() (bool, error) {
		f, err := floatingips.Get(context.Background(), c.OS.Network, user.ID).Extract()
		if err != nil {
			return false, err
		}
		return f.PortID == "", fmt.Errorf("still on port %s", f.PortID)
	})
}

// waitExternal waits until the Service's VIP carries addr and notServed
// addresses are reported, and returns the status.
func waitExternal(t *testing.T, k *framework.Kuryr, ns, addr string, notServed int) kuryrv1.KuryrLoadBalancerStatus {
	t.Helper()
	var klb kuryrv1.KuryrLoadBalancer
	framework.Eventually(t, 2*time.Minute, 500*time.Millisecond, "external IP "+addr+" on the VIP", func() (bool, error) {
		if err := k.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "web"}, &klb); err != nil {
			return false, err
		}
		f := klb.Status.FloatingIP
		return f != nil && f.IP == addr && len(klb.Status.ExternalIPsNotServed) == notServed,
			fmt.Errorf("floating IP %+v, not served %q", f, klb.Status.ExternalIPsNotServed)
	})
	return klb.Status
}

func setExternalIPs(t *testing.T, c *framework.Cloud, ns, name string, ips ...string) {
	t.Helper()
	patch, _ := json.Marshal(map[string]any{"spec": map[string]any{"externalIPs": ips}})
	if _, err := c.Kube.CoreV1().Services(ns).Patch(context.Background(), name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatalf("set externalIPs of %s/%s to %v: %v", ns, name, ips, err)
	}
}

// waitWarning waits for a Warning Event of reason about the Service whose
// note mentions what.
func waitWarning(t *testing.T, c *framework.Cloud, ns, reason, what string) {
	t.Helper()
	framework.Eventually(t, time.Minute, time.Second, "a Warning "+reason+" naming "+what, func() (bool, error) {
		evs, err := c.Kube.EventsV1().Events(ns).List(context.Background(), metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		for _, e := range evs.Items {
			if e.Type == "Warning" && e.Reason == reason && strings.Contains(e.Note, what) {
				return true, nil
			}
		}
		return false, fmt.Errorf("%d events, none", len(evs.Items))
	})
}

func askOutsideEventually(t *testing.T, outside ns.NetNS, ip string) string {
	t.Helper()
	var got string
	framework.Eventually(t, time.Minute, time.Second, "an answer through "+ip+" from outside", func() (bool, error) {
		got = askOutside(outside, ip)
		return got != "", fmt.Errorf("no answer")
	})
	return got
}
