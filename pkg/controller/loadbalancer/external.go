package loadbalancer

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kuryrv1 "github.com/kuryr-k8s/kuryr/api/v1"
	"github.com/kuryr-k8s/kuryr/pkg/neutron"
	"github.com/kuryr-k8s/kuryr/pkg/octavia"
)

// Floating IP allocation methods, as the original recorded them.
const (
	allocPool = "pool" // kuryr allocated it and releases it
	allocUser = "user" // the Service named it; kuryr only associates it
)

// external gives a LoadBalancer Service its floating IP (and takes it back
// from a Service that is no longer one), then publishes it in the
// Service's status.loadBalancer.
func (r *Reconciler) external(ctx context.Context, klb *kuryrv1.KuryrLoadBalancer, lb *octavia.LoadBalancer, uid string) error {
	published := publishedIP(klb)
	var ingress []corev1.LoadBalancerIngress
	if klb.Spec.Type == string(corev1.ServiceTypeLoadBalancer) {
		fip, err := r.floatingIP(ctx, klb, lb, uid)
		if err != nil {
			return err
		}
		klb.Status.FloatingIP = fip
		if fip != nil {
			ingress = []corev1.LoadBalancerIngress{{IP: fip.IP, IPMode: ptr.To(corev1.LoadBalancerIPModeVIP)}}
		}
	} else if err := r.releaseFloatingIPs(ctx, klb, lb.VIPPortID, uid); err != nil {
		return err
	}
	return r.publish(ctx, klb, uid, ingress, published)
}

// publishedIP is the floating IP kuryr recorded, and so published.
func publishedIP(klb *kuryrv1.KuryrLoadBalancer) string {
	if f := klb.Status.FloatingIP; f != nil {
		return f.IP
	}
	return ""
}

// floatingIP returns the VIP's floating IP, associating or allocating one.
func (r *Reconciler) floatingIP(ctx context.Context, klb *kuryrv1.KuryrLoadBalancer, lb *octavia.LoadBalancer, uid string) (*kuryrv1.FloatingIPState, error) {
	want := klb.Spec.LoadBalancerIP
	if r.Settings.ExternalNetwork == "" && want == "" {
		return nil, nil // reported by the Service reconciler's warnings
	}
	if lb.VIPPortID == "" {
		return nil, fmt.Errorf("load balancer %s has no VIP port yet", lb.ID)
	}
	onVIP, err := r.Neutron.ListFloatingIPs(ctx, neutron.FloatingIPFilter{PortID: lb.VIPPortID})
	if err != nil {
		return nil, err
	}
	for _, f := range onVIP {
		if (want == "" && ours(f, uid)) || (want != "" && f.Address == want) {
			return state(f, uid), nil
		}
		// The Service now names another address: let this one go.
		if err := r.dropFloatingIP(ctx, f, uid); err != nil {
			return nil, err
		}
	}
	if want != "" {
		return r.associateUsers(ctx, want, lb.VIPPortID, uid)
	}
	tagged, err := r.Neutron.ListFloatingIPs(ctx, neutron.FloatingIPFilter{Tags: r.tags(uid)[:2]})
	if err != nil {
		return nil, err
	}
	if len(tagged) > 0 {
		if err := r.Neutron.AssociateFloatingIP(ctx, tagged[0].ID, lb.VIPPortID); err != nil {
			return nil, err
		}
		return state(tagged[0], uid), nil
	}
	f, err := r.Neutron.CreateFloatingIP(ctx, r.Settings.ExternalNetwork, r.Settings.ExternalSubnet, lb.VIPPortID,
		klb.Spec.ProjectID, fipDescription, r.tags(uid))
	if err != nil {
		return nil, err
	}
	r.event(ctx, klb, corev1.EventTypeNormal, "FloatingIPAllocated", "Allocate", "floating IP %s on the VIP %s", f.Address, lb.VIPAddress)
	return state(*f, uid), nil
}

// associateUsers associates the floating IP the Service names.
func (r *Reconciler) associateUsers(ctx context.Context, address, vipPort, uid string) (*kuryrv1.FloatingIPState, error) {
	found, err := r.Neutron.ListFloatingIPs(ctx, neutron.FloatingIPFilter{Address: address})
	if err != nil {
		return nil, err
	}
	if len(found) == 0 {
		return nil, fmt.Errorf("loadBalancerIP %s is not an allocated floating IP: allocate it in Neutron first", address)
	}
	f := found[0]
	if f.PortID != "" && f.PortID != vipPort {
		return nil, fmt.Errorf("loadBalancerIP %s is in use by port %s", address, f.PortID)
	}
	if err := r.Neutron.AssociateFloatingIP(ctx, f.ID, vipPort); err != nil {
		return nil, err
	}
	return state(f, uid), nil
}

// fipDescription marks the floating IPs kuryr allocates (as the original
// did), so that one whose tagging failed is still known for kuryr's.
const fipDescription = "kuryr_lb"

// ours reports a floating IP kuryr allocated for this Service.
func ours(f neutron.FloatingIP, uid string) bool {
	return neutron.ServiceUIDOf(f.Tags) == uid || (len(f.Tags) == 0 && f.Description == fipDescription)
}

func state(f neutron.FloatingIP, uid string) *kuryrv1.FloatingIPState {
	m := allocUser
	if ours(f, uid) {
		m = allocPool
	}
	return &kuryrv1.FloatingIPState{ID: f.ID, IP: f.Address, AllocMethod: m}
}

// dropFloatingIP releases a floating IP kuryr allocated for this Service
// and disassociates one the user gave.
func (r *Reconciler) dropFloatingIP(ctx context.Context, f neutron.FloatingIP, uid string) error {
	if ours(f, uid) {
		return r.Neutron.DeleteFloatingIP(ctx, f.ID)
	}
	if err := r.Neutron.AssociateFloatingIP(ctx, f.ID, ""); err != nil && !neutron.IsNotFound(err) {
		return err
	}
	return nil
}

// releaseFloatingIPs lets go of every floating IP of the Service: those
// kuryr allocated (found by tag, recorded or not) are released, those on
// the VIP port (vipPort, if known) released if kuryr's, else disassociated.
func (r *Reconciler) releaseFloatingIPs(ctx context.Context, klb *kuryrv1.KuryrLoadBalancer, vipPort, uid string) error {
	found, err := r.Neutron.ListFloatingIPs(ctx, neutron.FloatingIPFilter{Tags: r.tags(uid)[:2]})
	if err != nil {
		return err
	}
	if vipPort != "" {
		onVIP, err := r.Neutron.ListFloatingIPs(ctx, neutron.FloatingIPFilter{PortID: vipPort})
		if err != nil {
			return err
		}
		found = append(found, onVIP...)
	}
	for _, f := range found {
		if err := r.dropFloatingIP(ctx, f, uid); err != nil && !neutron.IsNotFound(err) {
			return err
		}
	}
	klb.Status.FloatingIP = nil
	return nil
}

// publish writes the Service's status.loadBalancer.ingress for the
// LoadBalancer Services kuryr serves. It clears only what kuryr published
// (published): another controller may own a Service's external side.
func (r *Reconciler) publish(ctx context.Context, klb *kuryrv1.KuryrLoadBalancer, uid string, ingress []corev1.LoadBalancerIngress, published string) error {
	var svc corev1.Service
	if err := r.Get(ctx, types.NamespacedName{Namespace: klb.Namespace, Name: klb.Name}, &svc); err != nil {
		return client.IgnoreNotFound(err)
	}
	if string(svc.UID) != uid {
		return nil
	}
	have := svc.Status.LoadBalancer.Ingress
	if len(ingress) == 0 && (len(have) != 1 || have[0].IP != published) {
		return nil // nothing of kuryr's to clear
	}
	if ingressIPs(have) == ingressIPs(ingress) {
		return nil
	}
	orig := svc.DeepCopy()
	svc.Status.LoadBalancer.Ingress = ingress
	if err := r.Status().Patch(ctx, &svc, client.MergeFrom(orig)); err != nil {
		return fmt.Errorf("write the Service's status.loadBalancer: %w", client.IgnoreNotFound(err))
	}
	return nil
}

func ingressIPs(in []corev1.LoadBalancerIngress) string {
	ips := make([]string, 0, len(in))
	for _, i := range in {
		ips = append(ips, i.IP)
	}
	return strings.Join(ips, ",")
}
