//go:build e2e

package services

import (
	"context"
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/attributestags"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/subnets"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kuryrv1 "github.com/kuryr-k8s/kuryr/api/v1"
	"github.com/kuryr-k8s/kuryr/pkg/names"
	"github.com/kuryr-k8s/kuryr/pkg/neutron"
	"github.com/kuryr-k8s/kuryr/test/e2e/framework"
)

// fipSubnet is a second subnet of the external network, for the floating
// IPs of a Service that names it; the outside namespace reaches it on link.
const fipSubnet = "198.18.77.0/24"

// TestCloudProviderAnnotations: a Service moved from cloud-provider-openstack
// keeps meaning what its annotations say. An internal load balancer
// (service.beta.kubernetes.io/openstack-internal-load-balancer) gets no
// floating IP and publishes its VIP; floating-network-id and floating-subnet
// (a name), or floating-subnet-tags and a floating-subnet pattern, choose
// where the floating IP is allocated; with keep-floatingip
// the floating IP outlives its Service, the project's, and a new Service
// naming it in loadBalancerIP answers on the same address.
func TestCloudProviderAnnotations(t *testing.T) {
	c, k, ns := framework.Setup(t, "e2e-cpo")
	createBackends(t, c, ns, "web", 0, 2)
	subnetName := addExternalSubnet(t, c)

	in := webService(ns, "internal", "web")
	in.Spec.Type = corev1.ServiceTypeLoadBalancer
	in.Annotations = map[string]string{"service.beta.kubernetes.io/openstack-internal-load-balancer": "true"}
	inSvc := createService(t, c, in)
	if klb := waitKLB(t, k, ns, "internal", 2, 2*time.Minute); klb.Status.FloatingIP != nil {
		t.Errorf("internal load balancer: floating IP %+v, want none", klb.Status.FloatingIP)
	}
	if ip := ingressIP(t, c, ns, "internal"); ip != inSvc.Spec.ClusterIP {
		t.Errorf("internal load balancer publishes %s, want its VIP %s", ip, inSvc.Spec.ClusterIP)
	}

	kept := webService(ns, "kept", "web")
	kept.Spec.Type = corev1.ServiceTypeLoadBalancer
	kept.Annotations = map[string]string{"loadbalancer.openstack.org/floating-network-id": c.PublicNet,
		"loadbalancer.openstack.org/floating-subnet": subnetName, "loadbalancer.openstack.org/keep-floatingip": "true"}
	keptSvc := createService(t, c, kept)
	klb := waitKLB(t, k, ns, "kept", 2, 2*time.Minute)
	fip := klb.Status.FloatingIP
	if fip == nil {
		t.Fatal("no floating IP")
	}
	// Kept: deleted by the test, whatever happens below.
	t.Cleanup(func() { _ = neutron.New(c.OS.Network).DeleteFloatingIP(context.Background(), fip.ID) })
	if !netip.MustParsePrefix(fipSubnet).Contains(netip.MustParseAddr(fip.IP)) {
		t.Fatalf("floating IP %+v, want one of %s (floating-subnet %s)", fip, fipSubnet, subnetName)
	}
	outside := framework.OpenNetns(t, c.OutsideNetns)
	askOutsideEventually(t, outside, fip.IP)
	t.Logf("floating IP %s of subnet %s answered from outside", fip.IP, subnetName)

	// The same subnet chosen by its tags (the pattern matches every
	// subnet), without floating-network-id: of external_svc_net.
	tagged := webService(ns, "tagged", "web")
	tagged.Spec.Type = corev1.ServiceTypeLoadBalancer
	tagged.Annotations = map[string]string{"loadbalancer.openstack.org/floating-subnet-tags": "&e2e," + subnetName,
		"loadbalancer.openstack.org/floating-subnet": "~.*"}
	createService(t, c, tagged)
	tfip := waitKLB(t, k, ns, "tagged", 2, 2*time.Minute).Status.FloatingIP
	if tfip == nil || !netip.MustParsePrefix(fipSubnet).Contains(netip.MustParseAddr(tfip.IP)) {
		t.Fatalf("floating IP %+v, want one of %s (its tags and name)", tfip, fipSubnet)
	}
	t.Logf("floating IP %s of subnet %s chosen by its tags and a pattern", tfip.IP, subnetName)
	deleteService(t, c, ns, "tagged")
	classes(t, c, k, ns)

	deleteService(t, c, ns, "kept")
	framework.Eventually(t, 2*time.Minute, time.Second, "the kept floating IP the project's", func() (bool, error) {
		if lbs := serviceLBs(t, c, k.Cluster, string(keptSvc.UID)); len(lbs) > 0 {
			return false, fmt.Errorf("%d load balancers left", len(lbs))
		}
		got, err := neutron.New(c.OS.Network).ListFloatingIPs(context.Background(), neutron.FloatingIPFilter{Address: fip.IP})
		if err != nil || len(got) != 1 {
			return false, fmt.Errorf("%d floating IPs at %s (%v)", len(got), fip.IP, err)
		}
		f := got[0]
		return f.PortID == "" && names.ServiceUIDOf(f.Tags) == "" && f.Description == "",
			fmt.Errorf("floating IP %+v, want disassociated, without kuryr's tags and description", f)
	})

	again := webService(ns, "again", "web")
	again.Spec.Type = corev1.ServiceTypeLoadBalancer
	again.Spec.LoadBalancerIP = fip.IP
	createService(t, c, again)
	if st := waitKLB(t, k, ns, "again", 2, 2*time.Minute).Status.FloatingIP; st == nil || st.ID != fip.ID {
		t.Fatalf("floating IP of the new Service %+v, want the kept %s", st, fip.ID)
	}
	askOutsideEventually(t, outside, fip.IP)
	t.Logf("the kept floating IP %s answered again for a new Service naming it", fip.IP)
}

// classes: loadbalancer.openstack.org/class names a [LoadBalancerClass]
// section of kuryr.conf (the local cloud's "e2e" chooses subnets tagged
// e2e-class), whose choice wins over the Service's own annotations; a class
// kuryr.conf does not have is a Warning, and the floating IP stays.
func classes(t *testing.T, c *framework.Cloud, k *framework.Kuryr, ns string) {
	classy := webService(ns, "classy", "web")
	classy.Spec.Type = corev1.ServiceTypeLoadBalancer
	classy.Annotations = map[string]string{"loadbalancer.openstack.org/class": "e2e",
		"loadbalancer.openstack.org/floating-subnet-tags": "not-a-tag"}
	created := createService(t, c, classy)
	fip := waitKLB(t, k, ns, "classy", 2, 2*time.Minute).Status.FloatingIP
	if fip == nil || !netip.MustParsePrefix(fipSubnet).Contains(netip.MustParseAddr(fip.IP)) {
		t.Fatalf("floating IP %+v, want one of %s (class e2e)", fip, fipSubnet)
	}
	outside := framework.OpenNetns(t, c.OutsideNetns)
	askOutsideEventually(t, outside, fip.IP)
	t.Logf("floating IP %s chosen by class e2e answered from outside", fip.IP)

	setClass(t, c, ns, "e2e-typo")
	framework.Eventually(t, time.Minute, time.Second, "the translator's Warning about the unknown class", func() (bool, error) {
		evs, err := c.Kube.CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{
			FieldSelector: "involvedObject.name=classy,reason=NotEnforced"})
		if err != nil {
			return false, err
		}
		for _, e := range evs.Items {
			if strings.Contains(e.Message, `kuryr.conf has no [LoadBalancerClass "e2e-typo"] section; no floating IP is allocated or released`) {
				return true, nil
			}
		}
		return false, fmt.Errorf("%d NotEnforced Warnings, none about the class", len(evs.Items))
	})
	if now := classReconciled(t, k, ns, "e2e-typo").Status.FloatingIP; now == nil || now.ID != fip.ID {
		t.Fatalf("floating IP %+v with an unknown class, want %s kept", now, fip.IP)
	}
	// In Neutron: the Service's one floating IP, still on its VIP.
	mine, err := neutron.New(c.OS.Network).ListFloatingIPs(context.Background(),
		neutron.FloatingIPFilter{Description: "kuryr_lb " + string(created.UID)})
	if err != nil || len(mine) != 1 || mine[0].ID != fip.ID || mine[0].PortID == "" {
		t.Fatalf("the Service's floating IPs %+v (%v), want %s alone, associated", mine, err, fip.ID)
	}
	askOutsideEventually(t, outside, fip.IP)
	t.Logf("floating IP %s kept, and answering, while the class is unknown", fip.IP)

	setClass(t, c, ns, "e2e")
	if now := classReconciled(t, k, ns, "").Status.FloatingIP; now == nil || now.ID != fip.ID {
		t.Fatalf("floating IP %+v once the class is fixed, want %s kept", now, fip.IP)
	}
	t.Logf("floating IP %s kept once the class is fixed", fip.IP)
	deleteService(t, c, ns, "classy")
}

// classReconciled waits until the load balancer reconciler has seen the
// spec of classy with unknown as its unknown class ("": none).
func classReconciled(t *testing.T, k *framework.Kuryr, ns, unknown string) *kuryrv1.KuryrLoadBalancer {
	t.Helper()
	var klb kuryrv1.KuryrLoadBalancer
	framework.Eventually(t, time.Minute, time.Second, "the class "+unknown+" reconciled", func() (bool, error) {
		if err := k.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "classy"}, &klb); err != nil {
			return false, err
		}
		ready := meta.FindStatusCondition(klb.Status.Conditions, kuryrv1.ConditionReady)
		ext := klb.Spec.External
		if ext == nil || ext.UnknownClass != unknown || ready == nil || ready.ObservedGeneration != klb.Generation {
			return false, fmt.Errorf("external %+v, Ready %+v (generation %d)", ext, ready, klb.Generation)
		}
		return true, nil
	})
	return &klb
}

// setClass annotates the Service classy with a class.
func setClass(t *testing.T, c *framework.Cloud, ns, class string) {
	t.Helper()
	patch := fmt.Sprintf(`{"metadata":{"annotations":{"loadbalancer.openstack.org/class":%q}}}`, class)
	if _, err := c.Kube.CoreV1().Services(ns).Patch(context.Background(), "classy", types.MergePatchType,
		[]byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatalf("set the class %s: %v", class, err)
	}
}

// addExternalSubnet adds fipSubnet to the external network, with a route
// to it in the outside namespace, both removed at the end; returns its name.
func addExternalSubnet(t *testing.T, c *framework.Cloud) string {
	t.Helper()
	name := framework.Name("e2e-fip")
	s, err := subnets.Create(context.Background(), c.OS.Network, subnets.CreateOpts{NetworkID: c.PublicNet, Name: name,
		CIDR: fipSubnet, IPVersion: 4, EnableDHCP: new(bool)}).Extract()
	if err != nil {
		t.Fatalf("add subnet %s to the external network: %v", fipSubnet, err)
	}
	if _, err := attributestags.ReplaceAll(context.Background(), c.OS.Network, "subnets", s.ID,
		attributestags.ReplaceAllOpts{Tags: []string{"e2e", name, "e2e-class"}}).Extract(); err != nil {
		t.Fatalf("tag subnet %s: %v", name, err)
	}
	t.Cleanup(func() {
		framework.Eventually(t, time.Minute, 2*time.Second, "subnet "+name+" deleted", func() (bool, error) {
			err := subnets.Delete(context.Background(), c.OS.Network, s.ID).ExtractErr()
			return err == nil || neutron.IsNotFound(err), err
		})
	})
	outside := framework.OpenNetns(t, c.OutsideNetns)
	route := "ip route replace " + fipSubnet + " dev $(ip -o -4 addr show | awk '$4 ~ /^172\\.24\\.4\\./ {print $2; exit}')"
	if out, err := framework.InNetns(context.Background(), outside.Path(), "sh", "-c", route); err != nil {
		t.Fatalf("route to %s in the outside namespace: %v: %s", fipSubnet, err, out)
	}
	t.Cleanup(func() {
		_, _ = framework.InNetns(context.Background(), outside.Path(), "ip", "route", "del", fipSubnet)
	})
	return name
}

func ingressIP(t *testing.T, c *framework.Cloud, ns, name string) string {
	t.Helper()
	var ip string
	framework.Eventually(t, time.Minute, time.Second, name+"'s status.loadBalancer.ingress", func() (bool, error) {
		cur, err := c.Kube.CoreV1().Services(ns).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil || len(cur.Status.LoadBalancer.Ingress) == 0 {
			return false, err
		}
		ip = cur.Status.LoadBalancer.Ingress[0].IP
		return true, nil
	})
	return ip
}
