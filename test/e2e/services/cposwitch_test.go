//go:build e2e

package services

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/loadbalancers"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/floatingips"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kuryrv1 "github.com/kuryr-k8s/kuryr/api/v1"
	"github.com/kuryr-k8s/kuryr/test/e2e/framework"
)

// cpoFinalizer is the finalizer cloud-provider-openstack's service
// controller puts on each LoadBalancer Service it serves.
const cpoFinalizer = "service.kubernetes.io/load-balancer-cleanup"

// TestSwitchFromCloudProvider: a LoadBalancer Service that
// cloud-provider-openstack served, as it leaves it (its load balancer
// kube_service_<cluster>_<namespace>_<name> with a floating IP on its VIP,
// and its finalizer on the Service), moved to kuryr by docs/migrate.md's
// steps, keeps its external address: while the floating IP is on the old
// VIP kuryr does not take it and says why; once the old load balancer is
// deleted, kuryr's VIP carries it and it answers from outside; it stays
// the user's when the Service goes. (cloud-provider-openstack itself does
// not run here: the test makes what it leaves.)
func TestSwitchFromCloudProvider(t *testing.T) {
	c, k, ns := framework.Setup(t, "e2e-cposw")
	createBackends(t, c, ns, "web", 0, 2)
	ctx := context.Background()

	// cloud-provider-openstack's load balancer, with its floating IP.
	old, err := loadbalancers.Create(ctx, c.OS.LoadBalancer, loadbalancers.CreateOpts{
		Name: "kube_service_" + k.Cluster + "_" + ns + "_web", VipSubnetID: c.PodSubnet, Provider: "ovn", ProjectID: c.ProjectID,
	}).Extract()
	if err != nil {
		t.Fatalf("create cloud-provider-openstack's load balancer: %v", err)
	}
	t.Cleanup(func() { deleteOctaviaLB(t, c, old.ID) })
	waitLBStatus(t, c, old.ID, "ACTIVE")
	fip, err := floatingips.Create(ctx, c.OS.Network, floatingips.CreateOpts{FloatingNetworkID: c.PublicNet,
		PortID: old.VipPortID, ProjectID: c.ProjectID,
		Description: "Floating IP for Kubernetes external service " + ns + "/web from cluster " + k.Cluster}).Extract()
	if err != nil {
		t.Fatalf("floating IP for cloud-provider-openstack's VIP: %v", err)
	}
	t.Cleanup(func() { _ = floatingips.Delete(context.Background(), c.OS.Network, fip.ID).ExtractErr() })

	// Step 1: keep-floatingip, and its address in loadBalancerIP; the
	// Service as cloud-provider-openstack left it, with its finalizer.
	svc := webService(ns, "web", "web")
	svc.Spec.Type, svc.Spec.LoadBalancerIP = corev1.ServiceTypeLoadBalancer, fip.FloatingIP
	svc.Annotations = map[string]string{"loadbalancer.openstack.org/keep-floatingip": "true"}
	svc.Finalizers = []string{cpoFinalizer}
	createService(t, c, svc)
	t.Cleanup(func() { dropFinalizer(t, c, ns, "web") })
	framework.Eventually(t, 2*time.Minute, time.Second, "the address not taken from the old VIP", func() (bool, error) {
		klb, err := getKLB(k, ns, "web")
		if err != nil {
			return false, err
		}
		why := strings.Join(klb.Status.ExternalIPsNotServed, "; ")
		return strings.Contains(why, fip.FloatingIP+": in use by port "+old.VipPortID), fmt.Errorf("not served: %q", why)
	})
	t.Logf("kuryr leaves %s on cloud-provider-openstack's VIP port %s and says so", fip.FloatingIP, old.VipPortID)

	// Step 2: the old load balancer deleted (Neutron disassociates the
	// floating IP), the finalizer taken off.
	deleteOctaviaLB(t, c, old.ID)
	dropFinalizer(t, c, ns, "web")

	// Step 3: kuryr's VIP carries the address (the address not served is
	// looked at again every minute).
	start := time.Now()
	framework.Eventually(t, 3*time.Minute, time.Second, "the address on kuryr's VIP", func() (bool, error) {
		klb, err := getKLB(k, ns, "web")
		if err != nil {
			return false, err
		}
		st := klb.Status.FloatingIP
		return st != nil && st.ID == fip.ID, fmt.Errorf("floating IP %+v, not served %v", st, klb.Status.ExternalIPsNotServed)
	})
	if ip := ingressIP(t, c, ns, "web"); ip != fip.FloatingIP {
		t.Fatalf("ingress %s, want the kept %s", ip, fip.FloatingIP)
	}
	askOutsideEventually(t, framework.OpenNetns(t, c.OutsideNetns), fip.FloatingIP)
	t.Logf("%s moved to kuryr's VIP %.0f s after the old load balancer went, and answered from outside",
		fip.FloatingIP, time.Since(start).Seconds())

	deleteService(t, c, ns, "web")
	framework.Eventually(t, 2*time.Minute, time.Second, "the floating IP left to the project", func() (bool, error) {
		f, err := floatingips.Get(context.Background(), c.OS.Network, fip.ID).Extract()
		if err != nil {
			return false, err
		}
		return f.PortID == "", fmt.Errorf("still on port %s", f.PortID)
	})
}

func getKLB(k *framework.Kuryr, ns, name string) (*kuryrv1.KuryrLoadBalancer, error) {
	var klb kuryrv1.KuryrLoadBalancer
	err := k.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &klb)
	return &klb, err
}

// deleteOctaviaLB deletes a load balancer with what it holds and waits
// until it is gone.
func deleteOctaviaLB(t *testing.T, c *framework.Cloud, id string) {
	t.Helper()
	framework.Eventually(t, 2*time.Minute, time.Second, "load balancer "+id+" deleted", func() (bool, error) {
		err := loadbalancers.Delete(context.Background(), c.OS.LoadBalancer, id, loadbalancers.DeleteOpts{Cascade: true}).ExtractErr()
		if gophercloud.ResponseCodeIs(err, 404) {
			return true, nil
		}
		return false, fmt.Errorf("delete: %v", err) // 409 while it is PENDING_*
	})
}

// waitLBStatus waits for a load balancer's provisioning status.
func waitLBStatus(t *testing.T, c *framework.Cloud, id, want string) {
	t.Helper()
	framework.Eventually(t, time.Minute, 500*time.Millisecond, "load balancer "+id+" "+want, func() (bool, error) {
		lb, err := loadbalancers.Get(context.Background(), c.OS.LoadBalancer, id).Extract()
		if err != nil {
			return false, err
		}
		return lb.ProvisioningStatus == want, fmt.Errorf("provisioning status %s", lb.ProvisioningStatus)
	})
}

// dropFinalizer takes cloud-provider-openstack's finalizer off a Service.
func dropFinalizer(t *testing.T, c *framework.Cloud, ns, name string) {
	t.Helper()
	svc, err := c.Kube.CoreV1().Services(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		return // gone
	}
	var keep []string
	for _, f := range svc.Finalizers {
		if f != cpoFinalizer {
			keep = append(keep, f)
		}
	}
	list, _ := json.Marshal(keep) // a []string always marshals
	patch := fmt.Sprintf(`{"metadata":{"finalizers":%s,"resourceVersion":%q}}`, list, svc.ResourceVersion)
	if _, err := c.Kube.CoreV1().Services(ns).Patch(context.Background(), name, types.MergePatchType, []byte(patch),
		metav1.PatchOptions{}); err != nil {
		t.Errorf("take the finalizer off %s/%s: %v", ns, name, err)
	}
}
