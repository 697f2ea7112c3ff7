package migrate

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	kuryrv1 "github.com/kuryr-k8s/kuryr/api/v1"
	"github.com/kuryr-k8s/kuryr/pkg/cli/doctor"
	"github.com/kuryr-k8s/kuryr/pkg/controller/pod"
	"github.com/kuryr-k8s/kuryr/pkg/names"
)

// verdict is what finish makes of one object carrying the original's
// finalizer.
type verdict int

const (
	waiting  verdict = iota // kuryr does not own it yet
	owned                   // kuryr's object is Ready with what the original made
	replaced                // kuryr's object is Ready with something else
	free                    // nothing to own: terminating, or nothing recorded
)

// tally counts verdicts, naming the objects still waited for and those
// kuryr replaced.
type tally struct {
	released, waiting int
	waitedFor, repl   []string
	errs              []string
}

func (t *tally) add(kind, name string, v verdict, err error) {
	switch {
	case err != nil:
		t.errs = append(t.errs, fmt.Sprintf("%s %s: %v", kind, name, err))
	case v == waiting:
		t.waiting++
		if len(t.waitedFor) < 5 {
			t.waitedFor = append(t.waitedFor, kind+" "+name)
		}
	default:
		t.released++
		if v == replaced {
			t.repl = append(t.repl, kind+" "+name)
		}
	}
}

// ownership judges every Pod, Service and NetworkPolicy carrying the
// original's finalizer and, with release, removes it from those kuryr owns
// now or that need no owner. True: some are left.
func (r *run) ownership(ctx context.Context, release bool) (doctor.Finding, bool) {
	const c = "ownership"
	t := &tally{}
	for _, judge := range []func(context.Context, bool, *tally) error{r.pods, r.services, r.policies} {
		if err := judge(ctx, release, t); err != nil {
			return doctor.Findingf(c, doctor.Fail, "%v", err), true
		}
	}
	verb, n := "ready to be released", t.released
	if release {
		r.released += t.released
		verb, n = "released", r.released
	}
	msg := fmt.Sprintf("%d objects %s from the original's finalizers, %d waiting for kuryr", n, verb, t.waiting)
	if len(t.waitedFor) > 0 {
		msg += " (" + strings.Join(t.waitedFor, ", ") + ", ...)"
	}
	status := doctor.OK
	if len(t.repl) > 0 {
		status = doctor.Warn
		msg += fmt.Sprintf("; kuryr replaced what the original made for %v", t.repl)
	}
	if len(t.errs) > 0 {
		status = doctor.Warn
		msg += fmt.Sprintf("; errors: %v", t.errs)
	}
	return doctor.Findingf(c, status, "%s", msg), t.waiting > 0 || len(t.errs) > 0
}

func (r *run) pods(ctx context.Context, release bool, t *tally) error {
	var pods corev1.PodList
	if err := r.e.Client.List(ctx, &pods); err != nil {
		return fmt.Errorf("list pods: %w", err)
	}
	recorded := map[string]string{}
	for _, p := range r.rec.Ports {
		recorded[p.UID] = p.PortID
	}
	for i := range pods.Items {
		p := &pods.Items[i]
		if !controllerutil.ContainsFinalizer(p, names.PythonPodFinalizer) {
			continue
		}
		v := free
		if p.DeletionTimestamp.IsZero() && pod.NeedsPort(p) {
			var kp kuryrv1.KuryrPort
			err := r.e.Client.Get(ctx, client.ObjectKeyFromObject(p), &kp)
			if err != nil && !apierrors.IsNotFound(err) {
				t.add("pod", p.Namespace+"/"+p.Name, 0, err)
				continue
			}
			v = portVerdict(err == nil, &kp, string(p.UID), recorded)
		}
		t.add("pod", p.Namespace+"/"+p.Name, v, r.releaseIf(ctx, release, v, p, names.PythonPodFinalizer))
	}
	return nil
}

// portVerdict judges a pod by its KuryrPort. Pure.
func portVerdict(exists bool, kp *kuryrv1.KuryrPort, uid string, recorded map[string]string) verdict {
	if !exists || kp.Spec.PodUID != uid || !meta.IsStatusConditionTrue(kp.Status.Conditions, kuryrv1.ConditionReady) {
		return waiting
	}
	want, ok := recorded[uid]
	if !ok {
		return owned
	}
	if kp.Status.VIFs[kuryrv1.DefaultInterface].PortID != want {
		return replaced
	}
	return owned
}

func (r *run) services(ctx context.Context, release bool, t *tally) error {
	var svcs corev1.ServiceList
	if err := r.e.Client.List(ctx, &svcs); err != nil {
		return fmt.Errorf("list Services: %w", err)
	}
	recorded := map[string]string{}
	for _, s := range r.rec.Services {
		recorded[s.UID] = s.LoadBalancerID
	}
	for i := range svcs.Items {
		s := &svcs.Items[i]
		if !controllerutil.ContainsFinalizer(s, names.PythonServiceFinalizer) {
			continue
		}
		v := free
		if want, ok := recorded[string(s.UID)]; ok && s.DeletionTimestamp.IsZero() {
			var klb kuryrv1.KuryrLoadBalancer
			err := r.e.Client.Get(ctx, client.ObjectKeyFromObject(s), &klb)
			if err != nil && !apierrors.IsNotFound(err) {
				t.add("Service", s.Namespace+"/"+s.Name, 0, err)
				continue
			}
			v = lbVerdict(err == nil, &klb, want)
		}
		t.add("Service", s.Namespace+"/"+s.Name, v, r.releaseIf(ctx, release, v, s, names.PythonServiceFinalizer))
	}
	return nil
}

// lbVerdict judges a Service by its KuryrLoadBalancer. Pure.
func lbVerdict(exists bool, klb *kuryrv1.KuryrLoadBalancer, want string) verdict {
	if !exists || !meta.IsStatusConditionTrue(klb.Status.Conditions, kuryrv1.ConditionReady) || klb.Status.LoadBalancer == nil {
		return waiting
	}
	if klb.Status.LoadBalancer.ID != want {
		return replaced
	}
	return owned
}

func (r *run) policies(ctx context.Context, release bool, t *tally) error {
	var nps networkingv1.NetworkPolicyList
	if err := r.e.Client.List(ctx, &nps); err != nil {
		return fmt.Errorf("list NetworkPolicies: %w", err)
	}
	recorded := map[string]bool{}
	for _, p := range r.rec.Policies {
		recorded[p.UID] = true
	}
	for i := range nps.Items {
		np := &nps.Items[i]
		if !controllerutil.ContainsFinalizer(np, names.PythonPolicyFinalizer) {
			continue
		}
		v := free
		if recorded[string(np.UID)] && np.DeletionTimestamp.IsZero() {
			var knp kuryrv1.KuryrNetworkPolicy
			err := r.e.Client.Get(ctx, client.ObjectKeyFromObject(np), &knp)
			switch {
			case err != nil && !apierrors.IsNotFound(err):
				t.add("NetworkPolicy", np.Namespace+"/"+np.Name, 0, err)
				continue
			case err == nil && meta.IsStatusConditionTrue(knp.Status.Conditions, kuryrv1.ConditionReady):
				v = owned
			default:
				v = waiting
			}
		}
		t.add("NetworkPolicy", np.Namespace+"/"+np.Name, v, r.releaseIf(ctx, release, v, np, names.PythonPolicyFinalizer))
	}
	return nil
}

// releaseIf removes the finalizer from obj when release is asked and the
// verdict allows it (optimistic lock: a conflict is tried at the next
// look).
func (r *run) releaseIf(ctx context.Context, release bool, v verdict, obj client.Object, finalizer string) error {
	if !release || v == waiting {
		return nil
	}
	orig, ok := obj.DeepCopyObject().(client.Object)
	if !ok {
		return fmt.Errorf("copy %T", obj)
	}
	controllerutil.RemoveFinalizer(obj, finalizer)
	err := r.e.Client.Patch(ctx, obj, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{}))
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}
