package loadbalancer

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	kuryrv1 "github.com/kuryr-k8s/kuryr/api/v1"
	"github.com/kuryr-k8s/kuryr/pkg/controller/kit"
	"github.com/kuryr-k8s/kuryr/pkg/octavia"
	"github.com/kuryr-k8s/kuryr/pkg/retry"
)

func recordLB(klb *kuryrv1.KuryrLoadBalancer, lb *octavia.LoadBalancer) {
	klb.Status.LoadBalancer = &kuryrv1.LoadBalancerState{ID: lb.ID, IP: lb.VIPAddress, PortID: lb.VIPPortID,
		Provider: lb.Provider, ProvisioningStatus: lb.ProvisioningStatus}
}

func recordListeners(klb *kuryrv1.KuryrLoadBalancer, obs observed) {
	klb.Status.Listeners, klb.Status.Members = nil, 0
	for _, l := range obs.listeners {
		n := len(obs.members[l.DefaultPoolID])
		klb.Status.Listeners = append(klb.Status.Listeners, kuryrv1.ListenerState{ID: l.ID, Protocol: l.Protocol,
			Port: l.Port, PoolID: l.DefaultPoolID, Members: n})
		klb.Status.Members += n
	}
}

func setReady(klb *kuryrv1.KuryrLoadBalancer, s metav1.ConditionStatus, reason, msg string) {
	meta.SetStatusCondition(&klb.Status.Conditions, metav1.Condition{Type: kuryrv1.ConditionReady, Status: s,
		Reason: reason, Message: kuryrv1.ConditionMessage(msg), ObservedGeneration: klb.Generation})
}

// becomeReady marks klb Ready and tells the user when it first becomes so.
func (r *Reconciler) becomeReady(ctx context.Context, klb *kuryrv1.KuryrLoadBalancer, lb *octavia.LoadBalancer) {
	was := meta.IsStatusConditionTrue(klb.Status.Conditions, kuryrv1.ConditionReady)
	msg := fmt.Sprintf("load balancer %s (VIP %s): %d listeners, %d members", lb.ID, lb.VIPAddress,
		len(klb.Status.Listeners), klb.Status.Members)
	if fip := klb.Status.FloatingIP; fip != nil {
		msg += ", floating IP " + fip.IP
	}
	setReady(klb, metav1.ConditionTrue, kuryrv1.ReasonCreated, msg)
	if !was {
		r.event(ctx, klb, corev1.EventTypeNormal, "LoadBalancerReady", "Ensure", "%s", msg)
		log.FromContext(ctx).Info("load balancer ready", "loadBalancer", lb.ID, "members", klb.Status.Members)
	}
}

// failed records an Octavia or Neutron failure on the KuryrLoadBalancer
// and, unless it is the load balancer being busy, as an Event on the
// Service.
func (r *Reconciler) failed(ctx context.Context, klb *kuryrv1.KuryrLoadBalancer, err error) {
	if octavia.Busy(err) && !retry.Stopping(ctx, err) {
		setReady(klb, metav1.ConditionFalse, kuryrv1.ReasonWaiting, err.Error())
		return
	}
	// The condition is written with the status, after the reconcile.
	kit.Fail(ctx, r.Recorder, kit.Failure{Regarding: serviceOf(klb), Related: klb, Kind: string(octavia.Classify(err)), Action: "Ensure",
		SetReady: func(reason, msg string) error {
			setReady(klb, metav1.ConditionFalse, reason, msg)
			return nil
		}}, err)
}

// event records an Event regarding the Service, related to klb.
func (r *Reconciler) event(_ context.Context, klb *kuryrv1.KuryrLoadBalancer, typ, reason, action, note string, args ...any) {
	r.Recorder.Eventf(serviceOf(klb), klb, typ, reason, action, note, args...)
}

// serviceOf is the Service of klb, as Events regard it.
func serviceOf(klb *kuryrv1.KuryrLoadBalancer) *corev1.Service {
	return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: klb.Namespace, Name: klb.Name, UID: types.UID(serviceUID(klb))}}
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
	// kuryr published a floating IP, or the VIP (an internal load balancer;
	// never on a LoadBalancer Service of another class, whose status is its
	// controller's).
	vip := len(have) == 1 && have[0].IP == klb.Spec.IP &&
		(klb.Spec.Type == string(corev1.ServiceTypeLoadBalancer) || svc.Spec.Type != corev1.ServiceTypeLoadBalancer)
	if len(ingress) == 0 && (len(have) != 1 || have[0].IP != published) && !vip {
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
