package cleanup

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	kuryrv1 "github.com/kuryr-k8s/kuryr/api/v1"
	"github.com/kuryr-k8s/kuryr/pkg/controller/service"
	"github.com/kuryr-k8s/kuryr/pkg/names"
	"github.com/kuryr-k8s/kuryr/pkg/neutron"
	"github.com/kuryr-k8s/kuryr/pkg/octavia"
)

// resources is the Neutron seam of the sweep.
type resources interface {
	ListPorts(ctx context.Context, tags []string, status string) ([]neutron.Port, error)
	DeletePort(ctx context.Context, id string) error
	ListNetworks(ctx context.Context, tags []string) ([]neutron.Network, error)
	NetworkUsers(ctx context.Context, networkID string) ([]neutron.Port, error)
	RemoveRouterInterface(ctx context.Context, router, subnet string) error
	DeleteNetwork(ctx context.Context, id string) error
}

// pool is the port pool, as the sweep sees it: it forgets removed nodes, and
// adopts the pooled ports it does not know (committed by Neutron after kuryr
// gave up on their refill).
type pool interface {
	Prune(liveNodes map[string]bool)
	Adopt(ports []neutron.Port, holders map[string]string, liveNodes map[string]bool) int
}

// loadBalancers is the Octavia seam of the sweep.
type loadBalancers interface {
	FindLoadBalancers(ctx context.Context, tags []string) ([]octavia.LoadBalancer, error)
	DeleteLoadBalancer(ctx context.Context, id string) error
}

// floatingIPs is the Neutron seam of the sweep for Services' floating IPs.
type floatingIPs interface {
	ListFloatingIPs(ctx context.Context, f neutron.FloatingIPFilter) ([]neutron.FloatingIP, error)
	DeleteFloatingIP(ctx context.Context, id string) error
}

// securityGroups is the seam for Services' source groups.
type securityGroups interface {
	FindSecurityGroups(ctx context.Context, tags []string) ([]neutron.SecurityGroup, error)
	DeleteSecurityGroup(ctx context.Context, id string) error
}

// forgetter is told about ports the sweep deleted.
type forgetter interface{ ForgetPort(podUID, portID string) }

// MinAge spares what Neutron created less than this before the sweep
// listed it: its owner may not have reached this controller's cache yet
// (or clocks disagree).
const MinAge = 30 * time.Second

// Sweeper runs the sweep at start, once more after Settle (by then every
// request of a crashed predecessor has finished), again when what that
// committed last is older than MinAge, then every Period (sooner where
// Period is shorter). A failed sweep is tried again sooner (retryWait).
type Sweeper struct {
	Client  client.Reader
	Neutron resources
	Ledger  forgetter
	Cluster string
	Router  string
	Period  time.Duration
	Settle  time.Duration
	// Retry is the wait after a failed sweep (RetryMin when zero); it
	// doubles with each failure in a row, never past the planned sweep.
	Retry time.Duration
	// BindTimeout spares the ports Neutron may still be creating (see
	// neutron.CreateFinished): deleted meanwhile, a port can leave a stale
	// OVN port behind.
	BindTimeout time.Duration
	// Uninstall: no controller runs (kubectl kuryr uninstall), so no
	// owner is on its way (young objects are orphans too; ports Neutron may
	// still be creating are still spared, BindTimeout) and nothing needs
	// the cluster's shared groups.
	Uninstall bool
	// Pool is set when pools are on: pooled ports are then the pool's, except
	// those of removed nodes, which it forgets before they are deleted (so it
	// neither hands them out nor refills them). With pools off, unused
	// pooled ports are orphans (left by a pool that was switched off).
	Pool pool
	// NodePorts: nodes have management ports ([neutron_defaults]
	// node_subnet is set); RefusePorts: refuse ports ([kubernetes]
	// refuse_unserved_services, with Services).
	NodePorts, RefusePorts bool
	// Octavia and FloatingIPs are set when kuryr serves Services.
	Octavia     loadBalancers
	FloatingIPs floatingIPs
	// Groups, when set, are swept of Services' source groups.
	Groups securityGroups
	// Policies, when set, are swept of NetworkPolicies' groups; peer
	// groups through Peers.
	Policies policyGroups
	Peers    PeerSweeper
	// AddressGroups, when set with Policies, are swept of peers' address
	// groups through Peers (an AddressPeerSweeper).
	AddressGroups addressGroups
	// VMPairs, when set (VM nodes may be nested-macvlan), are swept of
	// pods' pairs whose ports are gone.
	VMPairs vmPairs
	// Binder, when set, binds the ports of live hypervisor pods that
	// Neutron unbound to their node again (UnboundPorts).
	Binder  binder
	rebinds counts
	// Ready is closed once the sweep may trust the cache (it is synced and
	// the ledger loaded).
	Ready <-chan struct{}
}

// Start runs until ctx ends (a manager Runnable).
func (s *Sweeper) Start(ctx context.Context) error {
	logger := log.FromContext(ctx).WithName("cleanup")
	select {
	case <-ctx.Done():
		return nil
	case <-s.Ready:
	}
	// After the start: once every request of a predecessor has ended, and
	// once more when what it committed last is no longer young.
	waits := []time.Duration{min(s.Settle, s.Period), min(MinAge+5*time.Second, s.Period)}
	planned, failures := time.Now(), 0
	for {
		// A retry that started before the planned sweep does not stand
		// for it, even if it ends after.
		started := time.Now()
		err := s.Sweep(ctx, logger)
		if ctx.Err() != nil {
			return nil
		}
		sweepSeconds.WithLabelValues(result(err)).Observe(time.Since(started).Seconds())
		if !started.Before(planned) {
			next := s.Period
			if len(waits) > 0 {
				next, waits = waits[0], waits[1:]
			}
			planned = time.Now().Add(next)
		}
		wait := time.Until(planned)
		if err != nil {
			failures++
			wait = min(wait, retryWait(cmp.Or(s.Retry, RetryMin), failures))
			if failures < 3 {
				logger.Info("sweeping orphaned Neutron resources failed: trying again", "reason", err.Error(),
					"failuresInARow", failures, "in", wait.String())
			} else {
				logger.Error(err, "sweeping orphaned Neutron resources keeps failing", "failuresInARow", failures,
					"in", wait.String())
			}
		} else {
			failures = 0
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(wait):
		}
	}
}

func result(err error) string {
	if err != nil {
		return "failed"
	}
	return "ok"
}

// Sweep deletes what belongs to no live pod, namespace or node (networks
// only once no port is left on them), and binds live pods' ports Neutron
// unbound to their node again (with Binder). Neutron is listed first and
// Kubernetes read after: whatever was created before the listing has its
// owner visible by then, so nothing in use is taken for an orphan. One
// failed delete does not stop the others. Reads only, when nothing is
// orphaned.
func (s *Sweeper) Sweep(ctx context.Context, logger logr.Logger) error {
	listedAt := time.Now()
	tag := []string{names.ClusterTag(s.Cluster)}
	// VM ports' pairs are read before the ports that own them are listed.
	var parents []neutron.ParentPort
	var pairsErr error
	if s.VMPairs != nil {
		parents, pairsErr = s.VMPairs.MacvlanParents(ctx) // a failure stops only this part
	}
	ports, err := s.Neutron.ListPorts(ctx, tag, "")
	if err != nil {
		return err
	}
	nets, err := s.Neutron.ListNetworks(ctx, tag)
	if err != nil {
		return err
	}
	svc, err := s.listServiceResources(ctx, tag)
	if err != nil {
		return err
	}
	var policyGroups []neutron.SecurityGroup
	var peerAddresses []neutron.AddressGroup
	if s.Policies != nil {
		if policyGroups, err = s.Policies.FindSecurityGroups(ctx, tag); err != nil {
			return err
		}
	}
	var listErr error
	if s.Policies != nil && s.AddressGroups != nil {
		// A failure here stops only this part of the sweep.
		peerAddresses, listErr = s.AddressGroups.ListAddressGroups(ctx, "")
	}
	owned, err := s.liveOwners(ctx)
	if err != nil {
		return err
	}
	s.stamp(&owned, listedAt)
	if s.Pool != nil {
		s.Pool.Prune(owned.Nodes)
		// Young ones may be a refill's still under way (Neutron lists a
		// bulk create's ports while it binds them): that refill gives
		// them to the pool itself, with their binding.
		if n := s.Pool.Adopt(owned.settled(ports), owned.Holders, owned.Nodes); n > 0 {
			logger.Info("the port pool adopted ports it did not know", "count", n)
		}
	}
	owned.PoolEnabled, owned.NodePortsEnabled, owned.RefusePortsEnabled = s.Pool != nil, s.NodePorts, s.RefusePorts
	var errs []error
	for _, p := range OrphanPorts(ports, owned) {
		logger.Info("deleting orphaned port", "port", p.ID, "podUid", names.PodUIDOf(p.Tags), "name", p.Name)
		if err := s.Neutron.DeletePort(ctx, p.ID); err != nil {
			errs = append(errs, err)
			continue
		}
		s.Ledger.ForgetPort(names.PodUIDOf(p.Tags), p.ID)
	}
	errs = append(errs, s.sweepNetworks(ctx, logger, OrphanNetworks(nets, owned)))
	errs = append(errs, s.sweepServices(ctx, logger, svc, owned), s.sweepPolicies(ctx, logger, policyGroups, owned),
		s.sweepAddressPeers(ctx, logger, peerAddresses, owned), listErr, pairsErr)
	if s.VMPairs != nil && pairsErr == nil {
		errs = append(errs, s.sweepPairs(ctx, logger, OrphanPairs(parents, ports, owned)))
	}
	if s.Binder != nil {
		s.rebinds.keep(owned.PortNode) // the counts of live pods' ports only
		errs = append(errs, s.rebind(ctx, logger, UnboundPorts(ports, owned)))
	}
	return errors.Join(errs...)
}

// stamp tells owned when OpenStack was listed and what is young then.
func (s *Sweeper) stamp(owned *Owners, listedAt time.Time) {
	owned.ListedAt, owned.Uninstall, owned.BindTimeout = listedAt, s.Uninstall, s.BindTimeout
	if !s.Uninstall {
		owned.Cutoff = listedAt.Add(-MinAge)
	}
}

func (s *Sweeper) liveOwners(ctx context.Context) (Owners, error) {
	o := Owners{PodUIDs: map[string]bool{}, PortIDs: map[string]bool{}, PortOfPod: map[string]string{}, PortNode: map[string]string{},
		Holders: map[string]string{}, VIFMACs: map[string]bool{}, Nodes: map[string]bool{}, NodePortOf: map[string]string{}, RefusePortOf: map[string]string{},
		Namespaces: map[string]bool{}, NetworkNodes: map[string]bool{}}
	var nodes corev1.NodeList
	if err := s.Client.List(ctx, &nodes); err != nil {
		return o, err
	}
	for _, n := range nodes.Items {
		o.Nodes[n.Name] = true
		for annotation, of := range map[string]map[string]string{kuryrv1.NodePortAnnotation: o.NodePortOf,
			kuryrv1.RefusePortAnnotation: o.RefusePortOf} {
			var np kuryrv1.NodePort
			if json.Unmarshal([]byte(n.Annotations[annotation]), &np) == nil && np.PortID != "" {
				of[n.Name] = np.PortID
			}
		}
	}
	var pods corev1.PodList
	if err := s.Client.List(ctx, &pods); err != nil {
		return o, err
	}
	for _, p := range pods.Items {
		o.PodUIDs[string(p.UID)] = true
	}
	var kps kuryrv1.KuryrPortList
	if err := s.Client.List(ctx, &kps); err != nil {
		return o, err
	}
	for _, kp := range kps.Items {
		o.PodUIDs[kp.Spec.PodUID] = true
		for _, v := range kp.Status.VIFs {
			o.PortIDs[v.PortID] = true
			o.PortOfPod[kp.Spec.PodUID] = v.PortID
			o.Holders[v.PortID] = kp.Spec.PodUID
			o.VIFMACs[strings.ToLower(v.MACAddress)] = true
			if v.Nested == nil && v.VIFType != "" && kp.Spec.PodNodeName != "" && kp.DeletionTimestamp.IsZero() {
				o.PortNode[v.PortID] = kp.Spec.PodNodeName
			}
		}
	}
	var kns kuryrv1.KuryrNetworkList
	if err := s.Client.List(ctx, &kns); err != nil {
		return o, err
	}
	for _, kn := range kns.Items {
		if kn.Spec.NodeName != "" {
			o.NetworkNodes[kn.Spec.NodeName] = true
			continue
		}
		o.Namespaces[kn.Spec.NsName] = true
	}
	if s.Octavia == nil {
		return o, nil
	}
	var klbs kuryrv1.KuryrLoadBalancerList
	if err := s.Client.List(ctx, &klbs); err != nil {
		return o, err
	}
	var svcs corev1.ServiceList
	if err := s.Client.List(ctx, &svcs); err != nil {
		return o, err
	}
	o.Services = serviceOwners(klbs.Items, svcs.Items)
	return o, nil
}

// serviceOwners are the UIDs of the Services that own what is tagged with
// them: those with a KuryrLoadBalancer, and those that get a load balancer
// before their KuryrLoadBalancer exists (adopted from the original kuryr,
// docs/migrate.md, or being recreated). Once a Service no longer gets one,
// its KuryrLoadBalancer's finalizer removes what it had, or, that gone
// too, the sweep. Pure.
func serviceOwners(klbs []kuryrv1.KuryrLoadBalancer, svcs []corev1.Service) map[string]bool {
	out := map[string]bool{}
	for _, klb := range klbs {
		for _, ref := range klb.OwnerReferences {
			out[string(ref.UID)] = true
		}
	}
	for i := range svcs {
		if service.Skip(&svcs[i], "") == "" {
			out[string(svcs[i].UID)] = true
		}
	}
	return out
}

// RetryMin is the default wait after a failed sweep.
const RetryMin = 5 * time.Second

// retryWait is the longest wait after failures (≥ 1) sweeps in a row
// failed: first doubled each time. Pure.
func retryWait(first time.Duration, failures int) time.Duration {
	return first << min(max(failures, 1)-1, 10)
}
