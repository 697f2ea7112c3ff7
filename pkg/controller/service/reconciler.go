package service

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"

	kuryrv1 "github.com/kuryr-k8s/kuryr/api/v1"
	"github.com/kuryr-k8s/kuryr/pkg/controller/kit"
)

// Reconciler keeps one KuryrLoadBalancer per served Service, owned by it,
// with the spec Desired computes. It is the only writer of their metadata
// and spec.
type Reconciler struct {
	client.Client
	Subnets  *Subnets
	Recorder kit.Recorder
	Settings Settings
	// Modes, when set, says how nodes plug their pods: a Service's
	// endpoints on nested-macvlan nodes get no source group (a Warning).
	Modes nodeModes
}

// Reconcile writes one Service's KuryrLoadBalancer.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var svc corev1.Service
	if err := r.Get(ctx, req.NamespacedName, &svc); err != nil {
		if apierrors.IsNotFound(err) {
			return ctrl.Result{}, r.remove(ctx, req.Namespace, req.Name, "")
		}
		return ctrl.Result{}, err
	}
	if why := Skip(&svc, r.Settings.Class); why != "" {
		return ctrl.Result{}, r.remove(ctx, svc.Namespace, svc.Name, "")
	}
	var eps discoveryv1.EndpointSliceList
	if err := r.List(ctx, &eps, client.InNamespace(svc.Namespace),
		client.MatchingLabels{discoveryv1.LabelServiceName: svc.Name}); err != nil {
		return ctrl.Result{}, fmt.Errorf("list EndpointSlices: %w", err)
	}
	if wait := awaitSlices(&svc, len(eps.Items), time.Now()); wait > 0 {
		return ctrl.Result{RequeueAfter: wait}, nil
	}
	if err := r.Subnets.Refresh(ctx, false); err != nil {
		log.FromContext(ctx).Info("subnets not read", "error", err.Error())
	}
	spec, unplaced := Desired(&svc, eps.Items, r.Settings, r.Subnets.Lookup)
	if len(unplaced) > 0 && r.Subnets.Refresh(ctx, true) == nil {
		// A subnet may be new (a namespace's): read them again.
		spec, unplaced = Desired(&svc, eps.Items, r.Settings, r.Subnets.Lookup)
	}
	changed, err := r.write(ctx, &svc, spec)
	if changed {
		r.warnUnfiltered(ctx, &svc, eps.Items)
	}
	if err != nil || len(unplaced) == 0 {
		return ctrl.Result{}, err
	}
	if changed {
		r.Recorder.Eventf(&svc, nil, corev1.EventTypeWarning, "MembersWithoutSubnet", "Translate",
			"endpoints %s are on no Neutron subnet kuryr knows, and the %s provider needs one: they are left out for now",
			strings.Join(unplaced, ", "), r.Settings.Provider)
	}
	return ctrl.Result{RequeueAfter: unplacedRetry}, nil
}

// slicesGrace: a new Service with a selector waits this long at most for
// its first EndpointSlice (the EndpointSlice controller publishes one, if
// empty, within milliseconds), so that its load balancer is created whole,
// members included, in one Octavia write: made without them, it takes one
// more locked write per port, seconds each with the ovn provider.
const slicesGrace = 3 * time.Second

// awaitSlices says how long a Service should wait for its first
// EndpointSlice before it is translated (0: not at all). Pure.
func awaitSlices(svc *corev1.Service, slices int, now time.Time) time.Duration {
	if len(svc.Spec.Selector) == 0 || slices > 0 {
		return 0
	}
	return max(0, svc.CreationTimestamp.Add(slicesGrace).Sub(now))
}

// unplacedRetry: endpoints on no known subnet are looked at again this
// often (their subnet may appear).
const unplacedRetry = 30 * time.Second

// write creates or updates the KuryrLoadBalancer (one left by an earlier
// Service of the same name is deleted first) and says whether it changed.
func (r *Reconciler) write(ctx context.Context, svc *corev1.Service, spec kuryrv1.KuryrLoadBalancerSpec) (bool, error) {
	var klb kuryrv1.KuryrLoadBalancer
	err := r.Get(ctx, client.ObjectKeyFromObject(svc), &klb)
	switch {
	case apierrors.IsNotFound(err):
		klb = kuryrv1.KuryrLoadBalancer{Spec: spec}
		klb.Namespace, klb.Name = svc.Namespace, svc.Name
		if err := controllerutil.SetControllerReference(svc, &klb, r.Scheme()); err != nil {
			return false, err
		}
		if err := r.Create(ctx, &klb); err != nil {
			return false, fmt.Errorf("create KuryrLoadBalancer: %w", err)
		}
		r.warn(svc)
		return true, nil
	case err != nil:
		return false, err
	case !metaOwnedBy(&klb, svc):
		if err := r.remove(ctx, svc.Namespace, svc.Name, string(svc.UID)); err != nil {
			return false, err
		}
		return false, fmt.Errorf("the KuryrLoadBalancer of an earlier Service %s/%s is being deleted; retrying", svc.Namespace, svc.Name)
	case equality.Semantic.DeepEqual(klb.Spec, spec):
		return false, nil
	}
	if !sameShape(klb.Spec, spec) {
		r.warn(svc) // the Service changed, not only its endpoints
	}
	klb.Spec = spec
	if err := r.Update(ctx, &klb); err != nil {
		return false, fmt.Errorf("update KuryrLoadBalancer: %w", err)
	}
	return true, nil
}

// sameShape compares two specs but for their members.
func sameShape(a, b kuryrv1.KuryrLoadBalancerSpec) bool {
	strip := func(s kuryrv1.KuryrLoadBalancerSpec) kuryrv1.KuryrLoadBalancerSpec {
		s.Ports = slices.Clone(s.Ports)
		for i := range s.Ports {
			s.Ports[i].Members = nil
		}
		return s
	}
	return equality.Semantic.DeepEqual(strip(a), strip(b))
}

func metaOwnedBy(klb *kuryrv1.KuryrLoadBalancer, svc *corev1.Service) bool {
	for _, o := range klb.OwnerReferences {
		if o.UID == svc.UID && o.Controller != nil && *o.Controller {
			return true
		}
	}
	return false
}

// remove deletes the KuryrLoadBalancer of a Service that is gone or no
// longer served (keepUID: except one owned by that Service). Its finalizer
// holds it until Octavia is cleaned up.
func (r *Reconciler) remove(ctx context.Context, ns, name, keepUID string) error {
	var klb kuryrv1.KuryrLoadBalancer
	if err := r.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &klb); err != nil {
		return client.IgnoreNotFound(err)
	}
	if !klb.DeletionTimestamp.IsZero() {
		return nil
	}
	for _, o := range klb.OwnerReferences {
		if keepUID != "" && string(o.UID) == keepUID {
			return nil
		}
	}
	if err := r.Delete(ctx, &klb, client.Preconditions{UID: &klb.UID}); err != nil {
		return client.IgnoreNotFound(err)
	}
	log.FromContext(ctx).Info("KuryrLoadBalancer deleted", "service", ns+"/"+name)
	return nil
}

// warn tells the user what the Service asks for that is not enforced.
func (r *Reconciler) warn(svc *corev1.Service) {
	ws := Warnings(svc, r.Settings)
	if svc.Spec.Type == corev1.ServiceTypeLoadBalancer && !r.Settings.External && !ownExternal(svc.Annotations, r.Settings.Classes) {
		ws = append(ws, "type LoadBalancer: no [neutron_defaults] external_svc_net is configured, so no external IP is allocated (loadBalancerIP must name an existing floating IP)")
	}
	if len(svc.Spec.LoadBalancerSourceRanges) > 0 && svc.Spec.Type == corev1.ServiceTypeLoadBalancer && r.Settings.Exposure != "" {
		ws = append(ws, "loadBalancerSourceRanges restrict nothing: "+r.Settings.Exposure)
	}
	for _, src := range svc.Spec.LoadBalancerSourceRanges {
		if _, _, err := net.ParseCIDR(strings.TrimSpace(src)); err != nil && svc.Spec.Type == corev1.ServiceTypeLoadBalancer {
			ws = append(ws, fmt.Sprintf("loadBalancerSourceRanges entry %q is not a CIDR: it admits nobody", src))
		}
	}
	if svc.Spec.Type == corev1.ServiceTypeLoadBalancer && foreignClass(svc, r.Settings.Class) {
		ws = nil // the external side is another controller's
	}
	if len(ws) > 0 {
		r.Recorder.Eventf(svc, nil, corev1.EventTypeWarning, "NotEnforced", "Translate", "%s", strings.Join(ws, "; "))
	}
}
