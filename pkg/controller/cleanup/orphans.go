// Package cleanup deletes Neutron resources of this cluster that no
// Kubernetes object owns any more: the ports of pods deleted while the
// controller was down, a network whose namespace vanished with its
// finalizer removed by hand, and the second port of a pod whose create was
// still in flight in Neutron when the controller crashed (Neutron commits it
// after the restarted controller has listed the ports, and it has no
// idempotency keys: only converging on "one port per pod" can fix that).
// Finalizers make all this rare; the sweep makes it impossible to leak.
package cleanup

import (
	"context"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	kuryrv1 "github.com/kuryr-k8s/kuryr/api/v1"
	"github.com/kuryr-k8s/kuryr/pkg/neutron"
)

// resources is the Neutron seam of the sweep.
type resources interface {
	ListPorts(ctx context.Context, tags []string, status string) ([]neutron.Port, error)
	DeletePort(ctx context.Context, id string) error
	ListNetworks(ctx context.Context, tags []string) ([]neutron.Network, error)
	RemoveRouterInterface(ctx context.Context, router, subnet string) error
	DeleteNetwork(ctx context.Context, id string) error
}

// nodePruner is the port pool, as the sweep sees it.
type nodePruner interface {
	Prune(liveNodes map[string]bool)
}

// forgetter is told about ports the sweep deleted.
type forgetter interface{ ForgetPort(podUID, portID string) }

// Sweeper runs the sweep at start, once more after Settle (by then every
// request of a crashed predecessor has finished), then every Period.
type Sweeper struct {
	Client  client.Reader
	Neutron resources
	Ledger  forgetter
	Cluster string
	Router  string
	Period  time.Duration
	Settle  time.Duration
	// Pool is set when pools are on: pooled ports are then the pool's, except
	// those of removed nodes, which it forgets before they are deleted (so it
	// neither hands them out nor refills them). With pools off, unused
	// pooled ports are orphans (left by a pool that was switched off).
	Pool nodePruner
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
	wait := s.Settle
	for {
		if err := s.Sweep(ctx, logger); err != nil {
			logger.Error(err, "sweeping orphaned Neutron resources")
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(wait):
		}
		wait = s.Period
	}
}

// Sweep deletes what belongs to no live pod or namespace. Reads only, when
// nothing is orphaned.
func (s *Sweeper) Sweep(ctx context.Context, logger logr.Logger) error {
	owned, err := s.liveOwners(ctx)
	if err != nil {
		return err
	}
	if s.Pool != nil {
		s.Pool.Prune(owned.Nodes)
	}
	tag := []string{neutron.ClusterTag(s.Cluster)}
	ports, err := s.Neutron.ListPorts(ctx, tag, "")
	if err != nil {
		return err
	}
	owned.PoolEnabled = s.Pool != nil
	for _, p := range OrphanPorts(ports, owned) {
		logger.Info("deleting orphaned port", "port", p.ID, "podUid", neutron.PodUIDOf(p.Tags), "name", p.Name)
		if err := s.Neutron.DeletePort(ctx, p.ID); err != nil {
			return err
		}
		s.Ledger.ForgetPort(neutron.PodUIDOf(p.Tags), p.ID)
	}
	nets, err := s.Neutron.ListNetworks(ctx, tag)
	if err != nil {
		return err
	}
	for _, n := range OrphanNetworks(nets, owned) {
		logger.Info("deleting orphaned network", "network", n.ID, "namespace", neutron.NamespaceOf(n.Tags))
		for _, sub := range n.Subnets {
			if err := s.Neutron.RemoveRouterInterface(ctx, s.Router, sub); err != nil {
				return err
			}
		}
		if err := s.Neutron.DeleteNetwork(ctx, n.ID); err != nil {
			return err
		}
	}
	return nil
}

// Owners is what is alive in Kubernetes.
type Owners struct {
	PodUIDs   map[string]bool   // pods, and the pods named by KuryrPorts
	PortIDs   map[string]bool   // ports named by KuryrPort status
	PortOfPod map[string]string // pod UID -> the port its KuryrPort names
	// PoolEnabled keeps unused pooled ports (tag kuryr-pool=<node>) of the
	// nodes that exist.
	PoolEnabled bool
	Nodes       map[string]bool // nodes
	Namespaces  map[string]bool // namespaces with a KuryrNetwork
}

func (s *Sweeper) liveOwners(ctx context.Context) (Owners, error) {
	o := Owners{PodUIDs: map[string]bool{}, PortIDs: map[string]bool{}, PortOfPod: map[string]string{},
		Nodes: map[string]bool{}, Namespaces: map[string]bool{}}
	var nodes corev1.NodeList
	if err := s.Client.List(ctx, &nodes); err != nil {
		return o, err
	}
	for _, n := range nodes.Items {
		o.Nodes[n.Name] = true
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
		}
	}
	var kns kuryrv1.KuryrNetworkList
	if err := s.Client.List(ctx, &kns); err != nil {
		return o, err
	}
	for _, kn := range kns.Items {
		o.Namespaces[kn.Spec.NsName] = true
	}
	return o, nil
}

// OrphanPorts are the pod ports whose pod and KuryrPort are both gone, the
// extra ports of a pod whose KuryrPort names another one, and unused pooled
// ports when pools are off or their node is gone. Pure.
func OrphanPorts(ports []neutron.Port, o Owners) []neutron.Port {
	var out []neutron.Port
	for _, p := range ports {
		uid := neutron.PodUIDOf(p.Tags)
		if o.PortIDs[p.ID] {
			continue
		}
		if uid == "" {
			if node := neutron.TagValue(p.Tags, "kuryr-pool="); node != "" && (!o.PoolEnabled || !o.Nodes[node]) {
				out = append(out, p)
			}
			continue
		}
		recorded, hasRecord := o.PortOfPod[uid]
		if !o.PodUIDs[uid] || (hasRecord && recorded != p.ID) {
			out = append(out, p)
		}
	}
	return out
}

// OrphanNetworks are the namespace networks without a KuryrNetwork. Pure.
func OrphanNetworks(nets []neutron.Network, o Owners) []neutron.Network {
	var out []neutron.Network
	for _, n := range nets {
		if ns := neutron.NamespaceOf(n.Tags); ns != "" && !o.Namespaces[ns] {
			out = append(out, n)
		}
	}
	return out
}
