package doctor

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kuryrv1 "github.com/kuryr-k8s/kuryr/api/v1"
	"github.com/kuryr-k8s/kuryr/pkg/cli/env"
	"github.com/kuryr-k8s/kuryr/pkg/octavia"
)

type octaviaLB = octavia.LoadBalancer

// podsWithoutPorts: Running pods on the pod network need a KuryrPort with
// a VIF.
func podsWithoutPorts(ctx context.Context, e *env.Env) []Finding {
	const c = "pod ports"
	var pods corev1.PodList
	if err := e.Client.List(ctx, &pods); err != nil {
		return []Finding{fail(c, "list pods: %v", err)}
	}
	var kps kuryrv1.KuryrPortList
	if err := e.Client.List(ctx, &kps); err != nil {
		return []Finding{fail(c, "list KuryrPorts: %v", err)}
	}
	withVIF := map[string]bool{}
	for _, kp := range kps.Items {
		if len(kp.Status.VIFs) > 0 {
			withVIF[kp.Namespace+"/"+kp.Name] = true
		}
	}
	var missing []string
	n := 0
	for _, p := range pods.Items {
		if p.Spec.HostNetwork || p.Status.Phase != corev1.PodRunning || p.Spec.NodeName == "" {
			continue
		}
		n++
		if !withVIF[p.Namespace+"/"+p.Name] {
			missing = append(missing, p.Namespace+"/"+p.Name)
		}
	}
	if len(missing) > 0 {
		return []Finding{fail(c, "%d Running pods have no KuryrPort with a VIF: %s", len(missing), list(missing))}
	}
	return []Finding{ok(c, "each of the %d Running pods on the pod network has a KuryrPort with a VIF", n)}
}

// notReady reports kuryr resources whose Ready condition is False.
func notReady(ctx context.Context, e *env.Env) []Finding {
	var out []Finding
	var kps kuryrv1.KuryrPortList
	var klbs kuryrv1.KuryrLoadBalancerList
	var knps kuryrv1.KuryrNetworkPolicyList
	kinds := []struct {
		kind string
		list client.ObjectList
		each func(func(ns, name string, cs []metav1.Condition))
	}{
		{"KuryrPort", &kps, func(f func(string, string, []metav1.Condition)) {
			for _, x := range kps.Items {
				f(x.Namespace, x.Name, x.Status.Conditions)
			}
		}},
		{"KuryrLoadBalancer", &klbs, func(f func(string, string, []metav1.Condition)) {
			for _, x := range klbs.Items {
				f(x.Namespace, x.Name, x.Status.Conditions)
			}
		}},
		{"KuryrNetworkPolicy", &knps, func(f func(string, string, []metav1.Condition)) {
			for _, x := range knps.Items {
				f(x.Namespace, x.Name, x.Status.Conditions)
			}
		}},
	}
	for _, k := range kinds {
		check := "ready " + k.kind
		if err := e.Client.List(ctx, k.list); err != nil {
			out = append(out, warn(check, "list %ss: %v", k.kind, err))
			continue
		}
		bad, total := 0, 0
		k.each(func(ns, name string, cs []metav1.Condition) {
			total++
			if r := findReady(cs); r != nil && r.Status == metav1.ConditionFalse {
				bad++
				out = append(out, warn(check, "%s %s/%s is not Ready (%s): %s", k.kind, ns, name, r.Reason, r.Message))
			}
		})
		if bad == 0 {
			out = append(out, ok(check, "no %s of the %d has Ready=False", k.kind, total))
		}
	}
	return out
}

func findReady(cs []metav1.Condition) *metav1.Condition {
	for i := range cs {
		if cs[i].Type == kuryrv1.ConditionReady {
			return &cs[i]
		}
	}
	return nil
}
