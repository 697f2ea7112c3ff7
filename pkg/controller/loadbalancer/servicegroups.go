package loadbalancer

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	kuryrv1 "github.com/kuryr-k8s/kuryr/api/v1"
	"github.com/kuryr-k8s/kuryr/pkg/controller/kit"
)

// memberIndex indexes KuryrLoadBalancers by the pods among their members
// ("namespace/name").
const memberIndex = "kuryr.openstack.org/member-pods"

// ServiceGroups are the source groups of the LoadBalancer Services a pod
// serves (sourcegroup.go): a portgroups.GroupSource, the twin of the
// policies' PodGroups. Its reader must have the index ServiceGroupsWatch
// registers.
type ServiceGroups struct{ Reader client.Reader }

// Groups returns the source groups of the KuryrLoadBalancers that name the
// pod as a member, by name and by one of its addresses, in its own
// namespace: an EndpointSlice is user-writable, and must not open another
// namespace's pod, or a pod by name only.
func (s ServiceGroups) Groups(ctx context.Context, kp *kuryrv1.KuryrPort) ([]string, error) {
	var list kuryrv1.KuryrLoadBalancerList
	if err := s.Reader.List(ctx, &list, client.InNamespace(kp.Namespace),
		client.MatchingFields{memberIndex: kp.Namespace + "/" + kp.Name}); err != nil {
		return nil, fmt.Errorf("list the Services pod %s/%s serves: %w", kp.Namespace, kp.Name, err)
	}
	ips := map[string]bool{}
	for _, v := range kp.Status.VIFs {
		for _, a := range v.IPs {
			ips[strings.SplitN(a.Address, "/", 2)[0]] = true
		}
	}
	var out []string
	for _, k := range list.Items {
		// The group exists while the Service is exposed (a LoadBalancer, or
		// externalIPs); its reconciler clears it from the status first.
		if !k.DeletionTimestamp.IsZero() || k.Status.SecurityGroup == "" {
			continue
		}
		if servesFrom(&k, kp.Namespace+"/"+kp.Name, ips) {
			out = append(out, k.Status.SecurityGroup)
		}
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

func servesFrom(k *kuryrv1.KuryrLoadBalancer, ref string, ips map[string]bool) bool {
	for _, p := range k.Spec.Ports {
		for _, m := range p.Members {
			if m.TargetRef == ref && ips[m.IP] {
				return true
			}
		}
	}
	return false
}

// memberPods are the pods a KuryrLoadBalancer names as members.
func memberPods(k *kuryrv1.KuryrLoadBalancer) []string {
	var out []string
	for _, p := range k.Spec.Ports {
		for _, m := range p.Members {
			if m.TargetRef != "" {
				out = append(out, m.TargetRef)
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// ServiceGroupsWatch indexes KuryrLoadBalancers by member pod (what
// ServiceGroups reads) and returns the watch that reconciles the
// KuryrPorts of a load balancer's members, before and after a change.
func ServiceGroupsWatch(ctx context.Context, mgr ctrl.Manager) (kit.Watch, error) {
	err := mgr.GetFieldIndexer().IndexField(ctx, &kuryrv1.KuryrLoadBalancer{}, memberIndex, func(o client.Object) []string {
		return memberPods(o.(*kuryrv1.KuryrLoadBalancer))
	})
	if err != nil {
		return kit.Watch{}, fmt.Errorf("index KuryrLoadBalancers by member pod: %w", err)
	}
	type queue = workqueue.TypedRateLimitingInterface[reconcile.Request]
	add := func(q queue, objs ...client.Object) {
		for _, o := range objs {
			if k, ok := o.(*kuryrv1.KuryrLoadBalancer); ok {
				for _, ref := range memberPods(k) {
					ns, name, _ := strings.Cut(ref, "/")
					q.Add(reconcile.Request{NamespacedName: types.NamespacedName{Namespace: ns, Name: name}})
				}
			}
		}
	}
	h := handler.TypedFuncs[client.Object, reconcile.Request]{
		CreateFunc: func(_ context.Context, e event.TypedCreateEvent[client.Object], q queue) { add(q, e.Object) },
		UpdateFunc: func(_ context.Context, e event.TypedUpdateEvent[client.Object], q queue) {
			add(q, e.ObjectOld, e.ObjectNew)
		},
		DeleteFunc: func(_ context.Context, e event.TypedDeleteEvent[client.Object], q queue) { add(q, e.Object) },
	}
	return kit.Watch{Object: &kuryrv1.KuryrLoadBalancer{}, Handler: h}, nil
}
