// Package loadbalancer makes Octavia match each KuryrLoadBalancer: one load
// balancer whose VIP is the ClusterIP, a listener and pool per port, the
// spec's members, and for LoadBalancer Services a floating IP on the VIP.
// It writes the KuryrLoadBalancer's status and the Service's
// status.loadBalancer, and nothing else.
package loadbalancer

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	kuryrv1 "github.com/kuryr-k8s/kuryr/api/v1"
	"github.com/kuryr-k8s/kuryr/pkg/controller/kit"
	"github.com/kuryr-k8s/kuryr/pkg/names"
	"github.com/kuryr-k8s/kuryr/pkg/neutron"
	"github.com/kuryr-k8s/kuryr/pkg/octavia"
	"github.com/kuryr-k8s/kuryr/pkg/openstack"
)

// loadBalancers is the Octavia seam of this reconciler.
type loadBalancers interface {
	FindLoadBalancers(ctx context.Context, tags []string) ([]octavia.LoadBalancer, error)
	GetLoadBalancer(ctx context.Context, id string) (*octavia.LoadBalancer, error)
	CreateLoadBalancer(ctx context.Context, s octavia.LoadBalancerSpec) (*octavia.LoadBalancer, error)
	DeleteLoadBalancer(ctx context.Context, id string) error
	Listeners(ctx context.Context, lbID string) ([]octavia.Listener, error)
	Pools(ctx context.Context, lbID string) ([]octavia.Pool, error)
	Members(ctx context.Context, poolID string) ([]octavia.Member, error)
	CreateListener(ctx context.Context, lbID string, l octavia.ListenerSpec) error
	DeleteListener(ctx context.Context, id string) error
	CreatePool(ctx context.Context, listenerID string, p octavia.PoolSpec) error
	DeletePool(ctx context.Context, id string) error
	SetAffinity(ctx context.Context, poolID string, timeout int32) error
	ProbeAffinity(ctx context.Context, lbID, algorithm string, tags []string) (octavia.AffinityProbe, error)
	SetMembers(ctx context.Context, poolID string, ms []octavia.MemberSpec) error
	CreateMember(ctx context.Context, poolID string, m octavia.MemberSpec) error
	DeleteMember(ctx context.Context, poolID, memberID string) error
}

// floatingIPs is the Neutron seam of this reconciler.
type floatingIPs interface {
	ListFloatingIPs(ctx context.Context, f neutron.FloatingIPFilter) ([]neutron.FloatingIP, error)
	CreateFloatingIP(ctx context.Context, s neutron.FloatingIPSpec) (*neutron.FloatingIP, error)
	AssociateFloatingIP(ctx context.Context, id, port string) error
	HandOverFloatingIP(ctx context.Context, id string, tags []string) error
	DeleteFloatingIP(ctx context.Context, id string) error
}

// netInfo serves network and subnet details (cached): the external
// network's subnets, for externalIPs kuryr allocates.
type netInfo interface {
	Network(ctx context.Context, id string) (*neutron.Network, error)
	Subnet(ctx context.Context, id string) (*neutron.Subnet, error)
	// ForgetNetwork drops a network from the cache (its subnets changed).
	ForgetNetwork(id string)
}

// Settings are the parts of kuryr.conf this reconciler uses.
type Settings struct {
	Cluster   string
	ExtraTags []string
	// ExternalNetwork and ExternalSubnet give LoadBalancer Services their
	// floating IPs ([neutron_defaults] external_svc_net, _subnet).
	ExternalNetwork, ExternalSubnet string
	// CreateSettle is how long a load balancer create that went unanswered
	// is looked for before it is made again: Octavia serializes creates, and
	// may commit one long after its client gave up.
	CreateSettle time.Duration
	// GoneSettle is how long none of a deleted Service's load balancers
	// must be listed before its KuryrLoadBalancer goes: ovn-octavia-provider
	// 8.0 may report one ERROR after it reported it DELETED (a request of
	// a failed delete that ends late), and Octavia lists it again. 0: none.
	GoneSettle time.Duration
	// Internal, when set, gives the prefixes cut out of
	// loadBalancerSourceRanges (the pods' and Services' networks, when
	// NetworkPolicies decide what they reach).
	Internal func(ctx context.Context) ([]netip.Prefix, error)
}

// Reconciler converges KuryrLoadBalancers and Octavia.
type Reconciler struct {
	client.Client
	Octavia loadBalancers
	Neutron floatingIPs
	Info    netInfo
	// Groups, when set, gives LoadBalancer Services their source groups.
	Groups   securityGroups
	Recorder kit.Recorder
	Settings Settings
	// unanswered holds the Services whose load balancer create went
	// unanswered: Octavia may still commit it. Read through creates().
	unanswered     openstack.Unanswered
	unansweredInit sync.Once
	progress       progress
	probes         affinityProbes
	reasserts      reasserts
	warned         warnings
}

// GoneSettle is the GoneSettle kuryr-controller uses.
const GoneSettle = 10 * time.Second

// Requeue intervals: Octavia objects are immutable while PENDING_*, and a
// write takes 0.3-4 s to become ACTIVE with the ovn provider.
const (
	pendingRequeue = time.Second
	stepRequeue    = 250 * time.Millisecond
	// deleteWait: how long a deleted Service's load balancer may stay
	// listed after kuryr's first delete before its KuryrLoadBalancer goes
	// without it; errorRedelete: the pace of deletes of one the provider
	// failed to delete (ERROR).
	deleteWait    = octavia.StuckDelete
	errorRedelete = 15 * time.Second
	// groupInUseRequeue: a source group the pods' ports still carry.
	groupInUseRequeue = 5 * time.Second
	// notServedRecheck: external addresses not served are tried again this
	// often (the user may allocate or free them meanwhile).
	notServedRecheck = time.Minute
)

// creates is the record of unanswered creates, its settle time set once
// (workers share it: none may write it while others read it).
func (r *Reconciler) creates() *openstack.Unanswered {
	r.unansweredInit.Do(func() { r.unanswered.Settle = r.Settings.CreateSettle })
	return &r.unanswered
}

func (r *Reconciler) tags(uid string) []string {
	return append([]string{names.ClusterTag(r.Settings.Cluster), names.ServiceTag(uid)}, r.Settings.ExtraTags...)
}

// serviceUID is the UID of the Service owning klb (written by the Service
// reconciler, the only writer of KuryrLoadBalancers' metadata and spec).
func serviceUID(klb *kuryrv1.KuryrLoadBalancer) string {
	for _, o := range klb.OwnerReferences {
		if o.Kind == "Service" && o.Controller != nil && *o.Controller {
			return string(o.UID)
		}
	}
	return ""
}

// Reconcile makes Octavia match one KuryrLoadBalancer.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var klb kuryrv1.KuryrLoadBalancer
	if err := r.Get(ctx, req.NamespacedName, &klb); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	uid := serviceUID(&klb)
	if uid == "" {
		return ctrl.Result{}, nil // not made by kuryr's Service reconciler: nothing to tag with
	}
	if !klb.DeletionTimestamp.IsZero() {
		return r.finalize(ctx, &klb, uid)
	}
	if err := kit.AddFinalizer(ctx, r.Client, &klb, kuryrv1.KuryrLoadBalancerFinalizer); err != nil {
		return ctrl.Result{}, err
	}
	orig := klb.DeepCopy()
	res, err := r.ensure(ctx, &klb, uid)
	if err != nil {
		r.failed(ctx, &klb, err)
	}
	if perr := r.writeStatus(ctx, &klb, orig); perr != nil {
		return ctrl.Result{}, errors.Join(err, perr)
	}
	if err != nil && octavia.Busy(err) {
		return ctrl.Result{RequeueAfter: pendingRequeue}, nil
	}
	return res, err
}

func (r *Reconciler) writeStatus(ctx context.Context, klb, orig *kuryrv1.KuryrLoadBalancer) error {
	if equality.Semantic.DeepEqual(klb.Status, orig.Status) {
		return nil
	}
	if err := r.Status().Patch(ctx, klb, client.MergeFrom(orig)); err != nil {
		return fmt.Errorf("write status: %w", client.IgnoreNotFound(err))
	}
	return nil
}

// ensure converges one step at a time and says when to look again.
func (r *Reconciler) ensure(ctx context.Context, klb *kuryrv1.KuryrLoadBalancer, uid string) (ctrl.Result, error) {
	lb, wait, err := r.loadBalancer(ctx, klb, uid)
	if err != nil {
		return ctrl.Result{}, err
	}
	if lb == nil {
		return ctrl.Result{RequeueAfter: wait}, nil
	}
	recordLB(klb, lb)
	switch {
	case lb.ProvisioningStatus != octavia.StatusPendingDelete && wasReplaced(klb, lb.ID):
		// The provider failed the delete and Octavia took it back: what
		// it left of the load balancer is not to be trusted.
		r.event(ctx, klb, corev1.EventTypeWarning, "LoadBalancerError", "Replace",
			"load balancer %s is %s again after kuryr deleted it to replace it; deleting it again", lb.ID, lb.ProvisioningStatus)
		return r.replace(ctx, klb, lb, uid, "delete again a replaced load balancer")
	case lb.ProvisioningStatus == octavia.StatusError:
		r.event(ctx, klb, corev1.EventTypeWarning, "LoadBalancerError", "Replace",
			"Octavia put load balancer %s in ERROR; replacing it", lb.ID)
		return r.replace(ctx, klb, lb, uid, "replace a load balancer in ERROR")
	case octavia.Pending(lb.ProvisioningStatus):
		setReady(klb, metav1.ConditionFalse, kuryrv1.ReasonWaiting, "load balancer "+lb.ID+" is "+lb.ProvisioningStatus)
		return ctrl.Result{RequeueAfter: r.progress.pending(uid)}, nil
	}
	obs, err := r.observe(ctx, lb.ID)
	if err != nil {
		return ctrl.Result{}, err
	}
	recordListeners(klb, obs)
	if child := pendingChild(obs); child != "" {
		return r.stuck(ctx, klb, lb, uid, child)
	}
	r.progress.settle(uid)
	if w, after := r.progress.awaiting(uid, lb.ID, obs); w != "" {
		setReady(klb, metav1.ConditionFalse, kuryrv1.ReasonWaiting, "waiting for "+w)
		return ctrl.Result{RequeueAfter: after}, nil
	}
	affinity, probed, err := r.affinity(ctx, klb, lb, uid)
	if err != nil {
		return ctrl.Result{}, err
	}
	if probed {
		return ctrl.Result{RequeueAfter: stepRequeue}, nil
	}
	if steps := plan(desiredListeners(klb, r.tags(uid), affinity), obs); len(steps) > 0 {
		if steps[0].kind == deletePool && affinity > 0 && affinityPool(obs.pools, steps[0].id) {
			r.reasserts.mark(uid)
		}
		return r.step(ctx, klb, lb, uid, obs, steps)
	}
	if id := r.reasserts.next(uid, obs.pools); id != "" {
		return r.step(ctx, klb, lb, uid, obs, []step{{kind: setAffinity, id: id,
			listener: octavia.ListenerSpec{Pool: octavia.PoolSpec{AffinityTimeout: affinity}}}})
	}
	// The external address first: the source group opens the member pods
	// only for an address that is served.
	if err := r.external(ctx, klb, lb, uid); err != nil {
		return ctrl.Result{}, err
	}
	if err := r.sourceGroup(ctx, klb, uid); err != nil {
		if errors.Is(err, errGroupInUse) {
			return ctrl.Result{RequeueAfter: groupInUseRequeue}, nil
		}
		return ctrl.Result{}, err
	}
	r.progress.done(uid)
	r.becomeReady(ctx, klb, lb)
	if len(klb.Status.ExternalIPsNotServed) > 0 {
		// The user may allocate them, or free them, at any time.
		return ctrl.Result{RequeueAfter: notServedRecheck}, nil
	}
	return ctrl.Result{}, nil
}

// step applies the first of steps. One that keeps coming back (Octavia
// does not show its effect) is retried with the queue's backoff; a member
// change that keeps coming back replaces its pool instead: the ovn
// provider answers the delete of a member it lost (an OVN write of its
// create failed half way) and leaves it in ERROR, every time, while the
// delete of its pool removes it.
func (r *Reconciler) step(ctx context.Context, klb *kuryrv1.KuryrLoadBalancer, lb *octavia.LoadBalancer, uid string, obs observed, steps []step) (ctrl.Result, error) {
	s := steps[0]
	n := r.progress.applied(uid, s.String())
	if n >= maxRepeats && s.changesMembers() {
		r.event(ctx, klb, corev1.EventTypeWarning, "PoolReplaced", "Replace",
			"Octavia did not show %q after %d tries (its provider may have lost a member); replacing pool %s", s, n-1, s.id)
		s = step{kind: deletePool, id: s.id, why: "members did not follow"}
		n = r.progress.applied(uid, s.String())
	}
	log.FromContext(ctx).Info("octavia", "loadBalancer", lb.ID, "step", s.String(), "pending", len(steps)-1)
	setReady(klb, metav1.ConditionFalse, kuryrv1.ReasonWaiting, s.String())
	if err := r.apply(ctx, lb.ID, s); err != nil {
		r.progress.refused(uid)
		if octavia.Unclear(err) { // Octavia may have taken it
			r.progress.sent(uid, lb.ID, s, echoWait(s, obs))
		}
		return ctrl.Result{}, err
	}
	r.progress.sent(uid, lb.ID, s, echoWait(s, obs))
	if n >= maxRepeats {
		return ctrl.Result{}, fmt.Errorf("%s: applied %d times without Octavia showing it; retrying with backoff", s, n)
	}
	return ctrl.Result{RequeueAfter: stepRequeue}, nil
}

// observe reads the load balancer's listeners, pools and members, the
// independent reads at once: under load an Octavia GET takes seconds, and
// a reconcile that reads one after the other keeps its worker that long.
func (r *Reconciler) observe(ctx context.Context, lbID string) (observed, error) {
	obs := observed{members: map[string][]octavia.Member{}}
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() (err error) { obs.listeners, err = r.Octavia.Listeners(gctx, lbID); return err })
	g.Go(func() (err error) { obs.pools, err = r.Octavia.Pools(gctx, lbID); return err })
	if err := g.Wait(); err != nil {
		return obs, err
	}
	members := make([][]octavia.Member, len(obs.pools))
	gone := make([]bool, len(obs.pools))
	g, gctx = errgroup.WithContext(ctx)
	g.SetLimit(4)
	for i, p := range obs.pools {
		g.Go(func() (err error) {
			members[i], err = r.Octavia.Members(gctx, p.ID)
			if octavia.NotFound(err) { // its delete finished after the list
				gone[i], err = true, nil
			}
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return obs, err
	}
	pools := obs.pools[:0:0]
	for i, p := range obs.pools {
		if !gone[i] {
			pools, obs.members[p.ID] = append(pools, p), members[i]
		}
	}
	obs.pools = pools
	return obs, nil
}

func (r *Reconciler) apply(ctx context.Context, lbID string, s step) error {
	switch s.kind {
	case deletePool:
		return r.Octavia.DeletePool(ctx, s.id)
	case deleteListener:
		return r.Octavia.DeleteListener(ctx, s.id)
	case createListener:
		return r.Octavia.CreateListener(ctx, lbID, s.listener)
	case createPool:
		return r.Octavia.CreatePool(ctx, s.id, s.listener.Pool)
	case setAffinity:
		return r.Octavia.SetAffinity(ctx, s.id, s.listener.Pool.AffinityTimeout)
	case deleteMember:
		return r.Octavia.DeleteMember(ctx, s.id, s.memberID)
	case createMember:
		return r.Octavia.CreateMember(ctx, s.id, s.member)
	}
	return r.Octavia.SetMembers(ctx, s.id, s.listener.Pool.Members)
}
