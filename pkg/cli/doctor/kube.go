package doctor

import (
	"context"
	"sort"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kuryr-k8s/kuryr/pkg/cli/env"
	"github.com/kuryr-k8s/kuryr/pkg/config"
	"github.com/kuryr-k8s/kuryr/pkg/names"
)

// now is the clock of the lease check (tests set it).
var now = time.Now

func controller(ctx context.Context, e *env.Env) []Finding {
	const c = "controller"
	var d appsv1.Deployment
	if err := e.Client.Get(ctx, client.ObjectKey{Namespace: e.KuryrNamespace, Name: names.Controller}, &d); err != nil {
		return []Finding{fail(c, "Deployment %s/%s: %v", e.KuryrNamespace, names.Controller, err)}
	}
	want := int32(1)
	if d.Spec.Replicas != nil {
		want = *d.Spec.Replicas
	}
	if d.Status.ReadyReplicas == 0 {
		return []Finding{fail(c, "Deployment %s has no ready replica (0/%d): no controller runs", names.Controller, want)}
	}
	if d.Status.ReadyReplicas < want {
		return []Finding{warn(c, "Deployment %s has %d/%d replicas ready", names.Controller, d.Status.ReadyReplicas, want)}
	}
	return []Finding{ok(c, "Deployment %s has %d/%d replicas ready", names.Controller, d.Status.ReadyReplicas, want)}
}

func leader(ctx context.Context, e *env.Env) []Finding {
	const c = "leader"
	ns := e.KuryrNamespace
	if cloud, err := e.Cloud(ctx); err == nil {
		if !cloud.Config.Kubernetes.ControllerHA {
			return []Finding{ok(c, "controller_ha is off: a single controller, no leader election")}
		}
		if cloud.Config.Kubernetes.HANamespace != "" {
			ns = cloud.Config.Kubernetes.HANamespace
		}
	}
	var l coordinationv1.Lease
	if err := e.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: names.Lease}, &l); err != nil {
		return []Finding{fail(c, "Lease %s/%s: %v (with controller_ha the leader holds it)", ns, names.Lease, err)}
	}
	holder := ""
	if l.Spec.HolderIdentity != nil {
		holder = *l.Spec.HolderIdentity
	}
	if holder == "" || l.Spec.RenewTime == nil {
		return []Finding{fail(c, "Lease %s/%s has no holder: no controller leads", ns, names.Lease)}
	}
	duration := 15 * time.Second
	if l.Spec.LeaseDurationSeconds != nil {
		duration = time.Duration(*l.Spec.LeaseDurationSeconds) * time.Second
	}
	age := now().Sub(l.Spec.RenewTime.Time).Round(time.Second)
	if age > 2*duration {
		return []Finding{fail(c, "Lease %s/%s is stale: %s last renewed it %s ago (lease duration %s): no controller leads",
			ns, names.Lease, holder, age, duration)}
	}
	who := config.LeaseHolder(holder)
	return []Finding{ok(c, "%s leads (Lease renewed %s ago)", who, age)}
}

func daemons(ctx context.Context, e *env.Env) []Finding {
	const c = "daemons"
	var ds appsv1.DaemonSet
	if err := e.Client.Get(ctx, client.ObjectKey{Namespace: e.KuryrNamespace, Name: names.Daemon}, &ds); err != nil {
		return []Finding{fail(c, "DaemonSet %s/%s: %v", e.KuryrNamespace, names.Daemon, err)}
	}
	s := ds.Status
	if s.DesiredNumberScheduled == s.NumberReady && s.NumberReady == s.UpdatedNumberScheduled {
		return []Finding{ok(c, "DaemonSet %s: %d desired, %d ready, %d up to date", names.Daemon,
			s.DesiredNumberScheduled, s.NumberReady, s.UpdatedNumberScheduled)}
	}
	if s.NumberReady == s.DesiredNumberScheduled {
		// Every node served, some by the previous version: a rollout.
		return []Finding{warn(c, "DaemonSet %s: %d of %d up to date (a rollout in progress?), all %d ready", names.Daemon,
			s.UpdatedNumberScheduled, s.DesiredNumberScheduled, s.NumberReady)}
	}
	return []Finding{fail(c, "DaemonSet %s: %d desired but %d ready and %d up to date", names.Daemon,
		s.DesiredNumberScheduled, s.NumberReady, s.UpdatedNumberScheduled)}
}

func nodes(ctx context.Context, e *env.Env) []Finding {
	const c = "nodes"
	var ns corev1.NodeList
	if err := e.Client.List(ctx, &ns); err != nil {
		return []Finding{fail(c, "list nodes: %v", err)}
	}
	pods, err := env.DaemonPods(ctx, e.Client, e.KuryrNamespace)
	if err != nil {
		return []Finding{fail(c, "%v", err)}
	}
	served := map[string]bool{}
	for _, p := range pods {
		if podReady(&p) {
			served[p.Spec.NodeName] = true
		}
	}
	var missing, notReady []string
	for _, n := range ns.Items {
		if !served[n.Name] {
			missing = append(missing, n.Name)
		}
		if !NodeReady(&n) {
			notReady = append(notReady, n.Name)
		}
	}
	var out []Finding
	if len(missing) > 0 {
		out = append(out, fail(c, "no Ready kuryr-daemon pod on %d of %d nodes: %s (pods there get no network)",
			len(missing), len(ns.Items), list(missing)))
	} else {
		out = append(out, ok(c, "a Ready kuryr-daemon pod on each of the %d nodes", len(ns.Items)))
	}
	if len(notReady) > 0 {
		out = append(out, warn(c, "nodes NotReady: %s", list(notReady)))
	}
	return out
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue && p.DeletionTimestamp == nil
		}
	}
	return false
}

// NodeReady says whether the node's Ready condition is True.
func NodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// CRDs kuryr needs.
var crdNames = []string{"kuryrports.openstack.org", "kuryrnetworks.openstack.org",
	"kuryrloadbalancers.openstack.org", "kuryrnetworkpolicies.openstack.org"}

func crds(ctx context.Context, e *env.Env) []Finding {
	const c = "crds"
	var bad []string
	for _, name := range crdNames {
		u := &unstructured.Unstructured{}
		u.SetAPIVersion("apiextensions.k8s.io/v1")
		u.SetKind("CustomResourceDefinition")
		if err := e.Client.Get(ctx, client.ObjectKey{Name: name}, u); err != nil {
			bad = append(bad, name+" ("+shortErr(err)+")")
			continue
		}
		if !established(u) {
			bad = append(bad, name+" (not established)")
		}
	}
	if len(bad) > 0 {
		return []Finding{fail(c, "CRDs missing or not established: %s", strings.Join(bad, ", "))}
	}
	return []Finding{ok(c, "the %d kuryr CRDs are established", len(crdNames))}
}

func established(u *unstructured.Unstructured) bool {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == "Established" && m["status"] == "True" {
			return true
		}
	}
	return false
}

func shortErr(err error) string {
	s := err.Error()
	if len(s) > 120 {
		s = s[:120] + "..."
	}
	return s
}

// list names items, at most 10.
func list(items []string) string {
	sort.Strings(items)
	if len(items) > 10 {
		return strings.Join(items[:10], ", ") + ", ..."
	}
	return strings.Join(items, ", ")
}
