// Package pod gives every scheduled, non-host-network pod a KuryrPort, and
// takes it away when the pod ends, so that the KuryrPort reconciler creates
// and deletes its Neutron port.
package pod

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	kuryrv1 "github.com/kuryr-k8s/kuryr/api/v1"
	"github.com/kuryr-k8s/kuryr/pkg/controller/kit"
)

// Reconciler keeps one KuryrPort per networked pod.
type Reconciler struct {
	client.Client
	// Namespaced: each namespace gets a KuryrNetwork (pod_subnets_driver =
	// namespace), created here when its first pod appears.
	Namespaced bool
	ProjectID  string
	// MirrorGrace is how long a static pod's KuryrPort outlives its mirror
	// pod: a deleted mirror pod is recreated by the kubelet (within its sync
	// period) while the static pod runs on.
	MirrorGrace time.Duration
	mirrors     missing
}

// NeedsPort says whether kuryr networks this pod: scheduled, not on the host
// network, and not finished. A pod being deleted keeps its port until the
// object is gone, so that it keeps its network during graceful termination.
func NeedsPort(p *corev1.Pod) bool {
	return p.Spec.NodeName != "" && !p.Spec.HostNetwork &&
		p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed
}

// Reconcile converges the KuryrPort of the pod named by req.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var pod corev1.Pod
	podErr := r.Get(ctx, req.NamespacedName, &pod)
	if podErr != nil && !apierrors.IsNotFound(podErr) {
		return ctrl.Result{}, podErr
	}
	want := podErr == nil && NeedsPort(&pod)

	var kp kuryrv1.KuryrPort
	kpErr := r.Get(ctx, req.NamespacedName, &kp)
	if kpErr != nil && !apierrors.IsNotFound(kpErr) {
		return ctrl.Result{}, kpErr
	}
	exists := kpErr == nil
	switch {
	case exists && (!want || !samePod(&kp, &pod)):
		// Gone, finished, or a new pod with the same name: the old port
		// goes first; deleting the KuryrPort triggers us again.
		if wait := r.mirrorGrace(req.NamespacedName, &kp, podErr); wait > 0 {
			return ctrl.Result{RequeueAfter: wait}, nil
		}
		if kp.DeletionTimestamp.IsZero() {
			log.FromContext(ctx).V(1).Info("releasing port", "podUid", kp.Spec.PodUID)
			return ctrl.Result{}, client.IgnoreNotFound(r.Delete(ctx, &kp))
		}
	case exists:
		r.mirrors.seen(req.NamespacedName)
	case !exists && want && pod.DeletionTimestamp.IsZero():
		// A terminating pod keeps the port it has but never gets a new one
		// (in a terminating namespace it could not be created anyway).
		if r.Namespaced {
			if err := r.ensureNetwork(ctx, pod.Namespace); err != nil {
				return ctrl.Result{}, err
			}
		}
		return ctrl.Result{}, r.createKuryrPort(ctx, &pod)
	}
	return ctrl.Result{}, nil
}

// mirrorGrace is how long to wait before releasing a static pod's
// KuryrPort whose mirror pod is missing (0: release now).
func (r *Reconciler) mirrorGrace(key types.NamespacedName, kp *kuryrv1.KuryrPort, podErr error) time.Duration {
	if kp.Spec.KubeletPodUID == "" || !apierrors.IsNotFound(podErr) {
		return 0
	}
	return r.mirrors.wait(key, r.MirrorGrace)
}

// missing remembers since when KuryrPorts have had no pod.
type missing struct {
	mu    sync.Mutex
	since map[types.NamespacedName]time.Time
}

// wait is what is left of grace since key was first seen missing.
func (m *missing) wait(key types.NamespacedName, grace time.Duration) time.Duration {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.since == nil {
		m.since = map[types.NamespacedName]time.Time{}
	}
	t, ok := m.since[key]
	if !ok {
		t = time.Now()
		m.since[key] = t
	}
	if left := grace - time.Since(t); left > 0 {
		return left
	}
	delete(m.since, key)
	return 0
}

// seen forgets that key was missing.
func (m *missing) seen(key types.NamespacedName) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.since, key)
}

// Annotations the kubelet puts on the mirror pods of static pods: where the
// pod comes from, and the UID the kubelet knows it by (its config hash).
const (
	configSource = "kubernetes.io/config.source"
	configMirror = "kubernetes.io/config.mirror"
)

// samePod reports whether kp networks pod. A static pod is the same pod as
// long as the kubelet's UID for it is: its mirror pod may be deleted and
// recreated (with a new UID) while its sandbox keeps running.
func samePod(kp *kuryrv1.KuryrPort, pod *corev1.Pod) bool {
	if kp.Spec.KubeletPodUID != "" {
		return kp.Spec.KubeletPodUID == pod.Annotations[configMirror]
	}
	return kp.Spec.PodUID == string(pod.UID)
}

// Desired is the KuryrPort of a pod. Pure. It is owned by its pod, so that
// the garbage collector deletes it with the pod even while kuryr is down;
// except for a static pod, whose mirror pod can be recreated under it (this
// reconciler then deletes it when the static pod goes).
func Desired(p *corev1.Pod) *kuryrv1.KuryrPort {
	yes := true
	var owners []metav1.OwnerReference
	if p.Annotations[configMirror] == "" {
		owners = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: p.Name, UID: p.UID, Controller: &yes}}
	}
	return &kuryrv1.KuryrPort{
		ObjectMeta: metav1.ObjectMeta{
			Name: p.Name, Namespace: p.Namespace,
			Labels:          map[string]string{kuryrv1.NodeNameLabel: p.Spec.NodeName},
			Finalizers:      []string{kuryrv1.KuryrPortFinalizer},
			OwnerReferences: owners,
		},
		Spec: kuryrv1.KuryrPortSpec{
			PodUID: string(p.UID), PodNodeName: p.Spec.NodeName,
			PodStatic:     p.Annotations[configSource] != "" && p.Annotations[configSource] != "api",
			KubeletPodUID: p.Annotations[configMirror],
		},
	}
}

func (r *Reconciler) createKuryrPort(ctx context.Context, p *corev1.Pod) error {
	err := r.Create(ctx, Desired(p))
	if apierrors.IsAlreadyExists(err) {
		return nil // our cache was behind; the next event converges
	}
	if err != nil {
		return fmt.Errorf("create KuryrPort for pod %s/%s: %w", p.Namespace, p.Name, err)
	}
	return nil
}

func (r *Reconciler) ensureNetwork(ctx context.Context, ns string) error {
	var kn kuryrv1.KuryrNetwork
	err := r.Get(ctx, types.NamespacedName{Namespace: ns, Name: ns}, &kn)
	if !apierrors.IsNotFound(err) {
		return err
	}
	kn = kuryrv1.KuryrNetwork{
		ObjectMeta: metav1.ObjectMeta{Name: ns, Namespace: ns, Finalizers: []string{kuryrv1.KuryrNetworkFinalizer}},
		Spec:       kuryrv1.KuryrNetworkSpec{NsName: ns, ProjectID: r.ProjectID},
	}
	if err := r.Create(ctx, &kn); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create KuryrNetwork for namespace %s: %w", ns, err)
	}
	return nil
}

// SetupWithManager watches pods that are scheduled and not on the host
// network, and the KuryrPorts of pods (a static pod's is not owned by its
// mirror pod, so they are matched by name).
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, workers int) error {
	scheduled := predicate.NewPredicateFuncs(func(o client.Object) bool {
		p, ok := o.(*corev1.Pod)
		return ok && p.Spec.NodeName != "" && !p.Spec.HostNetwork
	})
	// A KuryrPort's pod has its name: the one that owns it, or, for a static
	// pod, the mirror pod of that name. Others (made by hand) are left alone.
	ofPod := handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
		kp, ok := o.(*kuryrv1.KuryrPort)
		if !ok || (metav1.GetControllerOf(kp) == nil && kp.Spec.KubeletPodUID == "") {
			return nil
		}
		return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: kp.Namespace, Name: kp.Name}}}
	})
	return ctrl.NewControllerManagedBy(mgr).
		Named("pod").
		For(&corev1.Pod{}, builder.WithPredicates(scheduled)).
		Watches(&kuryrv1.KuryrPort{}, ofPod).
		WithOptions(controller.Options{MaxConcurrentReconciles: workers}).
		Complete(kit.RetryConflicts(r))
}
