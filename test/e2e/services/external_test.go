//go:build e2e

package services

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/containernetworking/plugins/pkg/ns"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kuryrv1 "github.com/kuryr-k8s/kuryr/api/v1"

	"github.com/kuryr-k8s/kuryr/pkg/controller/service"
	"github.com/kuryr-k8s/kuryr/pkg/names"
	"github.com/kuryr-k8s/kuryr/pkg/neutron"
	"github.com/kuryr-k8s/kuryr/test/e2e/framework"
)

// TestLoadBalancerService: a LoadBalancer Service gets a floating IP on its
// VIP, published in status.loadBalancer, reached from the outside
// namespace; what the provider cannot enforce is a Warning Event; the
// floating IP is released with the Service.
func TestLoadBalancerService(t *testing.T) {
	c, k, ns := framework.Setup(t, "e2e-lbsvc")
	// Three: with KURYR_E2E_POD_NODES=vms (the VM nodes first) at least one
	// is on a hypervisor, where the source ranges are enforced.
	backends := createBackends(t, c, ns, "web", 0, 3)
	s := webService(ns, "web", "web")
	s.Spec.Type = corev1.ServiceTypeLoadBalancer
	s.Spec.LoadBalancerSourceRanges = []string{"172.24.4.0/24"}
	start := time.Now()
	svc := createService(t, c, s)
	klb := waitKLB(t, k, ns, "web", len(backends), 2*time.Minute)
	if klb.Status.FloatingIP == nil || klb.Status.FloatingIP.AllocMethod != "pool" {
		t.Fatalf("floating IP %+v, want one kuryr allocated", klb.Status.FloatingIP)
	}
	var ip string
	framework.Eventually(t, time.Minute, time.Second, "status.loadBalancer.ingress", func() (bool, error) {
		cur, err := c.Kube.CoreV1().Services(ns).Get(context.Background(), "web", metav1.GetOptions{})
		if err != nil || len(cur.Status.LoadBalancer.Ingress) == 0 {
			return false, err
		}
		ip = cur.Status.LoadBalancer.Ingress[0].IP
		return ip == klb.Status.FloatingIP.IP, fmt.Errorf("ingress %s, floating IP %s", ip, klb.Status.FloatingIP.IP)
	})
	outside := framework.OpenNetns(t, c.OutsideNetns)
	want := map[string]bool{}
	for _, b := range backends {
		want[b.Name] = true
	}
	seen := map[string]bool{}
	framework.Eventually(t, 2*time.Minute, time.Second, "every backend through the floating IP "+ip+" from outside", func() (bool, error) {
		out, err := framework.InNetns(context.Background(), outside.Path(), "busybox", "sh", "-c",
			fmt.Sprintf(`printf 'GET / HTTP/1.0\r\n\r\n' | busybox nc -w 2 %s 80 | tail -n 1`, ip))
		if err == nil {
			seen[strings.TrimSpace(out)] = true
		}
		return len(seen) == len(want), fmt.Errorf("reached %v (last error %v)", seen, err)
	})
	t.Logf("LoadBalancer Service answered on %s from outside %s after creation", ip, time.Since(start).Round(time.Millisecond))
	group := sourceGroupOnMembers(t, c, k, ns, len(backends))

	// Source ranges that leave the outside namespace (172.24.4.1) out:
	// refused; back in: answered again. Backends on nested-macvlan nodes
	// (KURYR_E2E_POD_NODES=vms) are filtered by their VM's port alone: they
	// still answer, and a Warning names them.
	setSourceRanges(t, c, ns, "web", "192.0.2.0/24")
	unfiltered := map[string]bool{}
	for _, b := range backends {
		if slices.Contains(c.VMNodes, b.Spec.NodeName) {
			unfiltered[b.Name] = true
		}
	}
	if len(unfiltered) == len(backends) {
		t.Fatalf("every backend is on a nested-macvlan node (%v): the source ranges cannot be checked", c.VMNodes)
	}
	if len(unfiltered) > 0 {
		w := warnings(t, c, ns, "web", service.ReasonSourceRangesNotEnforced)
		for name := range unfiltered {
			if !strings.Contains(w, name+" on ") {
				t.Errorf("the Warning does not name %s, a nested-macvlan backend: %q", name, w)
			}
		}
		t.Logf("%d of %d backends on nested-macvlan nodes: source ranges not enforced there, Warning %q", len(unfiltered), len(backends), w)
	}
	framework.Eventually(t, time.Minute, time.Second, "no answer through "+ip+" from outside the source ranges but from nested-macvlan backends",
		func() (bool, error) {
			for i := 0; i < 3; i++ {
				if out := askOutside(outside, ip); out != "" && !unfiltered[out] {
					return false, fmt.Errorf("answered %q", out)
				}
			}
			return true, nil
		})
	setSourceRanges(t, c, ns, "web", "172.24.4.1/32")
	framework.Eventually(t, time.Minute, time.Second, "an answer through "+ip+" from inside the source ranges", func() (bool, error) {
		out := askOutside(outside, ip)
		return out != "", fmt.Errorf("no answer")
	})

	deleteService(t, c, ns, "web")
	framework.Eventually(t, 2*time.Minute, time.Second, "load balancer and floating IP released", func() (bool, error) {
		fips, err := neutron.New(c.OS.Network).ListFloatingIPs(context.Background(),
			neutron.FloatingIPFilter{Tags: []string{names.ServiceTag(string(svc.UID))}})
		if err != nil {
			return false, err
		}
		lbs := serviceLBs(t, c, k.Cluster, string(svc.UID))
		sgs, err := neutron.New(c.OS.Network).FindSecurityGroups(context.Background(), []string{names.ServiceTag(string(svc.UID))})
		if err != nil {
			return false, err
		}
		return len(fips) == 0 && len(lbs) == 0 && len(sgs) == 0,
			fmt.Errorf("%d floating IPs, %d load balancers, %d source groups (%s) left", len(fips), len(lbs), len(sgs), group)
	})
}

// askOutside asks for / through ip:80 from the outside namespace and
// returns the backend that answered ("" when none did).
func askOutside(outside ns.NetNS, ip string) string {
	out, err := framework.InNetns(context.Background(), outside.Path(), "busybox", "sh", "-c",
		fmt.Sprintf(`printf 'GET / HTTP/1.0\r\n\r\n' | busybox nc -w 2 %s 80 | tail -n 1`, ip))
	out = strings.TrimSpace(out)
	if err != nil || !strings.HasPrefix(out, "web-") { // the backends answer their names
		return ""
	}
	return out
}

func setSourceRanges(t *testing.T, c *framework.Cloud, ns, name string, ranges ...string) {
	t.Helper()
	patch, _ := json.Marshal(map[string]any{"spec": map[string]any{"loadBalancerSourceRanges": ranges}})
	if _, err := c.Kube.CoreV1().Services(ns).Patch(context.Background(), name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatalf("set loadBalancerSourceRanges of %s/%s to %v: %v", ns, name, ranges, err)
	}
}

// sourceGroupOnMembers waits until the Service's source group is recorded
// and every member pod's port carries it, and returns it.
func sourceGroupOnMembers(t *testing.T, c *framework.Cloud, k *framework.Kuryr, namespace string, members int) string {
	t.Helper()
	var group string
	framework.Eventually(t, time.Minute, time.Second, "the source group on the member pods' ports", func() (bool, error) {
		var klb kuryrv1.KuryrLoadBalancer
		if err := k.Client.Get(context.Background(), client.ObjectKey{Namespace: namespace, Name: "web"}, &klb); err != nil {
			return false, err
		}
		if group = klb.Status.SecurityGroup; group == "" {
			return false, fmt.Errorf("no source group recorded")
		}
		var kps kuryrv1.KuryrPortList
		if err := k.Client.List(context.Background(), &kps, client.InNamespace(namespace)); err != nil {
			return false, err
		}
		carrying := 0
		for _, kp := range kps.Items {
			vif, ok := kp.Status.DefaultVIF()
			if !ok {
				continue
			}
			sgs, _, err := neutron.New(c.OS.Network).PortSecurityGroups(context.Background(), vif.PortID)
			if err != nil {
				return false, err
			}
			if slices.Contains(sgs, group) {
				carrying++
			}
		}
		return carrying == members, fmt.Errorf("%d of %d member ports carry %s", carrying, members, group)
	})
	return group
}
