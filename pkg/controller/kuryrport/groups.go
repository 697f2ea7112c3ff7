package kuryrport

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	kuryrv1 "github.com/kuryr-k8s/kuryr/api/v1"
	"github.com/kuryr-k8s/kuryr/pkg/controller/portgroups"
	"github.com/kuryr-k8s/kuryr/pkg/neutron"
)

// groupsAtCreation are the groups a new port is created with, or a taken
// pooled or adopted port is given before the pod is told about it: there
// is no moment in which a pod runs with fewer groups than it should have.
func (r *Reconciler) groupsAtCreation(ctx context.Context, kp *kuryrv1.KuryrPort) ([]string, error) {
	if r.Groups == nil {
		return nil, nil
	}
	return r.Groups.Groups(ctx, kp)
}

// giveGroups sets a port's groups to the base groups and want, unless it
// carries exactly those already (a pooled or adopted port may carry
// another pod's).
func (r *Reconciler) giveGroups(ctx context.Context, port *neutron.Port, want []string) error {
	if r.Groups == nil || len(want)+len(r.Settings.SecurityGroups) == 0 {
		return nil
	}
	all := union(r.Settings.SecurityGroups, want)
	if slices.Equal(union(port.SecurityGroups, nil), all) {
		return nil
	}
	if err := r.GroupPorts.SetPortSecurityGroups(ctx, port.ID, all); err != nil {
		return err
	}
	port.SecurityGroups = all
	return nil
}

// groupPorts is the Neutron seam for a port's security groups.
type groupPorts interface {
	SetPortSecurityGroups(ctx context.Context, portID string, sgs []string) error
	PortSecurityGroups(ctx context.Context, portID string) ([]string, error)
}

// memberIndex indexes KuryrLoadBalancers by the pods among their members
// ("namespace/name").
const memberIndex = "kuryr.openstack.org/member-pods"

// ServiceGroups are the source groups of the LoadBalancer Services a pod
// serves (see the loadbalancer package).
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

// watchServiceGroups indexes KuryrLoadBalancers by member pod and returns
// the handler that reconciles the KuryrPorts of a load balancer's members,
// before and after a change.
func watchServiceGroups(ctx context.Context, mgr ctrl.Manager) (handler.EventHandler, error) {
	err := mgr.GetFieldIndexer().IndexField(ctx, &kuryrv1.KuryrLoadBalancer{}, memberIndex, func(o client.Object) []string {
		return memberPods(o.(*kuryrv1.KuryrLoadBalancer))
	})
	if err != nil {
		return nil, fmt.Errorf("index KuryrLoadBalancers by member pod: %w", err)
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
	return handler.TypedFuncs[client.Object, reconcile.Request]{
		CreateFunc: func(_ context.Context, e event.TypedCreateEvent[client.Object], q queue) { add(q, e.Object) },
		UpdateFunc: func(_ context.Context, e event.TypedUpdateEvent[client.Object], q queue) {
			add(q, e.ObjectOld, e.ObjectNew)
		},
		DeleteFunc: func(_ context.Context, e event.TypedDeleteEvent[client.Object], q queue) { add(q, e.Object) },
	}, nil
}

// ensureGroups gives a plugged pod's port the groups its sources give it
// (policies, Services) and takes away those they no longer give, and
// records them: a restart that finds them recorded writes nothing.
func (r *Reconciler) ensureGroups(ctx context.Context, kp *kuryrv1.KuryrPort, vif kuryrv1.VIF) error {
	if r.Groups == nil {
		return nil
	}
	want, err := r.Groups.Groups(ctx, kp)
	var notReady *portgroups.GroupsNotReady
	if errors.As(err, &notReady) {
		// Fail closed meanwhile; retried until ready.
		if err := r.applyGroups(ctx, kp, vif, notReady.Groups); err != nil {
			return err
		}
		return notReady
	}
	if err != nil {
		return err
	}
	return r.applyGroups(ctx, kp, vif, want)
}

func (r *Reconciler) applyGroups(ctx context.Context, kp *kuryrv1.KuryrPort, vif kuryrv1.VIF, want []string) error {
	// A port created with pod_security_groups only has nothing to add.
	settled := kp.Status.SecurityGroupsApplied || len(want) == 0
	if slices.Equal(want, kp.Status.SecurityGroups) && settled {
		return nil
	}
	base := r.Settings.SecurityGroups
	if len(base) == 0 {
		// Neutron gave the port the project's default group: keep what
		// the port carries that kuryr did not add.
		have, err := r.GroupPorts.PortSecurityGroups(ctx, vif.PortID)
		if err != nil {
			return err
		}
		base = slices.DeleteFunc(have, func(g string) bool { return slices.Contains(kp.Status.SecurityGroups, g) })
	}
	// Recorded before the port changes (everything it may carry), after
	// it (what it carries): a crash in between never leaves a group on
	// the port that the status does not name.
	if err := r.recordGroups(ctx, kp, union(kp.Status.SecurityGroups, want), false); err != nil {
		return err
	}
	if err := r.GroupPorts.SetPortSecurityGroups(ctx, vif.PortID, union(base, want)); err != nil {
		return err // retried with backoff; the pod stays plugged
	}
	if err := r.recordGroups(ctx, kp, want, true); err != nil {
		return err
	}
	log.FromContext(ctx).Info("security groups", "port", vif.PortID, "groups", want)
	return nil
}

func (r *Reconciler) recordGroups(ctx context.Context, kp *kuryrv1.KuryrPort, groups []string, applied bool) error {
	if slices.Equal(groups, kp.Status.SecurityGroups) && applied == kp.Status.SecurityGroupsApplied {
		return nil
	}
	orig := kp.DeepCopy()
	kp.Status.SecurityGroups, kp.Status.SecurityGroupsApplied = groups, applied
	if err := r.Status().Patch(ctx, kp, client.MergeFrom(orig)); err != nil {
		return fmt.Errorf("record security groups: %w", err)
	}
	return nil
}

// poolable says whether a port the pod releases may go back to the pool:
// one the pool does not record as this pod's is left to Release to judge
// (never touched: another pod may hold it now); one it does is first
// given back pod_security_groups, the groups it was created with, when
// sources give ports other groups (false: it cannot be; it is deleted).
func (r *Reconciler) poolable(ctx context.Context, podUID, portID string) bool {
	if r.Groups == nil || !r.Pool.Holds(portID, podUID) {
		return true
	}
	if len(r.Settings.SecurityGroups) == 0 {
		return false
	}
	if err := r.GroupPorts.SetPortSecurityGroups(ctx, portID, r.Settings.SecurityGroups); err != nil {
		log.FromContext(ctx).Info("port not pooled: its groups could not be reset", "port", portID, "error", err.Error())
		return false
	}
	return true
}

// failClosed: a pod whose groups cannot be told yet already has a port
// (made or taken before a policy changed): the port gets the groups that
// fail closed meanwhile, so it never keeps a group that is going away
// (whose policy would wait for it forever) nor an open one.
func (r *Reconciler) failClosed(ctx context.Context, kp *kuryrv1.KuryrPort, err error) error {
	var nr *portgroups.GroupsNotReady
	p, held := r.Ledger.Lookup(kp.Spec.PodUID)
	if !errors.As(err, &nr) || !held || r.Ledger.Doomed(p.ID) {
		return nil
	}
	if err := r.giveGroups(ctx, &p, nr.Groups); err != nil {
		return err
	}
	r.Ledger.Record(kp.Spec.PodUID, p)
	return nil
}

// union returns the sorted, de-duplicated groups of a and b.
func union(a, b []string) []string {
	out := append(slices.Clone(a), b...)
	slices.Sort(out)
	return slices.Compact(out)
}
