// Package cleanup deletes Neutron resources of this cluster that no
// Kubernetes object owns any more: the ports of pods deleted while the
// controller was down, a network whose namespace vanished with its
// finalizer removed by hand, the network of a removed node (once its ports
// are gone), the management port of a removed node, and the second port of
// a pod whose create was still in flight in Neutron when the controller
// crashed or gave up on it (Neutron has no idempotency keys: only
// converging on "one port per pod" can fix that). Finalizers make all this
// rare; the sweep makes it impossible to leak.
package cleanup

import (
	"time"

	"github.com/kuryr-k8s/kuryr/pkg/names"
	"github.com/kuryr-k8s/kuryr/pkg/neutron"
	"github.com/kuryr-k8s/kuryr/pkg/octavia"
)

// Owners is what is alive in Kubernetes, read after Neutron was listed.
type Owners struct {
	PodUIDs   map[string]bool   // pods, and the pods named by KuryrPorts
	PortIDs   map[string]bool   // ports named by KuryrPort status
	PortOfPod map[string]string // pod UID -> the port its KuryrPort names
	Holders   map[string]string // port id -> the pod whose KuryrPort names it
	VIFMACs   map[string]bool   // MACs (lower case) KuryrPorts' VIFs record
	PortNode  map[string]string // port id -> its pod's node, for hypervisor pods (not nested)
	// PoolEnabled keeps unused pooled ports of the nodes that exist;
	// NodePortsEnabled the management ports of the nodes that exist,
	// RefusePortsEnabled their refuse ports.
	PoolEnabled, NodePortsEnabled, RefusePortsEnabled bool
	Nodes                                             map[string]bool   // nodes
	NodePortOf                                        map[string]string // node -> the management port its annotation names
	RefusePortOf                                      map[string]string // node -> the refuse port its annotation names
	Namespaces                                        map[string]bool   // namespaces with a KuryrNetwork
	NetworkNodes                                      map[string]bool   // nodes with a KuryrNetwork
	Services                                          map[string]bool   // UIDs of the Services with a KuryrLoadBalancer
	// Cutoff, when set, spares what was created after it (young objects
	// whose owner may not be visible yet).
	Cutoff time.Time
	// BindTimeout, when set, spares the ports Neutron may still have been
	// creating when they were listed (at ListedAt; see
	// neutron.CreateFinished).
	BindTimeout time.Duration
	// Uninstall: the cluster's shared groups are orphans too (see
	// Sweeper.Uninstall).
	Uninstall bool
	ListedAt  time.Time
}

// OrphanPorts are the pod ports whose pod and KuryrPort are both gone, the
// extra ports of a pod whose KuryrPort names another one, unused pooled
// ports when pools are off or their node is gone, and the management ports
// of removed nodes and those their node's annotation does not name; none
// that Neutron may still be creating. Pure.
func OrphanPorts(ports []neutron.Port, o Owners) []neutron.Port {
	var out []neutron.Port
	for _, p := range ports {
		if o.PortIDs[p.ID] || o.unsettled(&p) {
			continue
		}
		if orphanPort(p, o) {
			out = append(out, p)
		}
	}
	return out
}

func orphanPort(p neutron.Port, o Owners) bool {
	if uid := names.PodUIDOf(p.Tags); uid != "" {
		recorded, hasRecord := o.PortOfPod[uid]
		return !o.PodUIDs[uid] || (hasRecord && recorded != p.ID)
	}
	if node := names.PoolNodeOf(p.Tags); node != "" {
		return !o.PoolEnabled || !o.Nodes[node]
	}
	if node := names.NodeOf(p.Tags); node != "" {
		// A node's port is the one its annotation names: another is a
		// duplicate (its create went unanswered and was made again).
		return !o.NodePortsEnabled || !o.Nodes[node] || o.NodePortOf[node] != p.ID
	}
	if node := names.RefuseNodeOf(p.Tags); node != "" {
		return !o.RefusePortsEnabled || !o.Nodes[node] || o.RefusePortOf[node] != p.ID
	}
	return false
}

func (o Owners) young(created time.Time) bool { return !o.Cutoff.IsZero() && created.After(o.Cutoff) }

// unsettled says whether p was young, or possibly still being created by
// Neutron, when it was listed: nothing is written to it then.
func (o Owners) unsettled(p *neutron.Port) bool {
	return o.young(p.CreatedAt) || o.BindTimeout > 0 && !neutron.CreateFinished(p, o.BindTimeout, o.ListedAt)
}

// settled are the ports that are not young. Pure.
func (o Owners) settled(ports []neutron.Port) []neutron.Port {
	var out []neutron.Port
	for _, p := range ports {
		if !o.young(p.CreatedAt) {
			out = append(out, p)
		}
	}
	return out
}

// OrphanNetworks are the namespace networks without a KuryrNetwork, and the
// node networks of removed nodes without one (a live node's network is
// never an orphan: its KuryrNetwork may be missing only for a moment, or
// in another mode, and its pods may still use it). Whether ports remain on
// them is checked before each is deleted. Pure.
func OrphanNetworks(nets []neutron.Network, o Owners) []neutron.Network {
	var out []neutron.Network
	for _, n := range nets {
		if o.young(n.CreatedAt) {
			continue
		}
		ns, node := names.NamespaceOf(n.Tags), names.NodeNetworkOf(n.Tags)
		if (ns != "" && !o.Namespaces[ns]) || (node != "" && !o.Nodes[node] && !o.NetworkNodes[node]) {
			out = append(out, n)
		}
	}
	return out
}

// OrphanLoadBalancers are the load balancers of Services without a
// KuryrLoadBalancer. Pure.
func OrphanLoadBalancers(lbs []octavia.LoadBalancer, o Owners) []octavia.LoadBalancer {
	return serviceOrphans(lbs, o, func(lb octavia.LoadBalancer) ([]string, time.Time) { return lb.Tags, lb.CreatedAt })
}

// OrphanFloatingIPs are the floating IPs kuryr allocated for Services
// without a KuryrLoadBalancer. Pure.
func OrphanFloatingIPs(fips []neutron.FloatingIP, o Owners) []neutron.FloatingIP {
	return serviceOrphans(fips, o, func(f neutron.FloatingIP) ([]string, time.Time) { return f.Tags, f.CreatedAt })
}

// OrphanGroups are the source groups of Services without a
// KuryrLoadBalancer. Pure.
func OrphanGroups(groups []neutron.SecurityGroup, o Owners) []neutron.SecurityGroup {
	return serviceOrphans(groups, o, func(g neutron.SecurityGroup) ([]string, time.Time) { return g.Tags, g.CreatedAt })
}

// serviceOrphans are the items tagged with a Service that has no
// KuryrLoadBalancer, and not young.
func serviceOrphans[T any](items []T, o Owners, of func(T) ([]string, time.Time)) []T {
	var out []T
	for _, it := range items {
		tags, created := of(it)
		if uid := names.ServiceUIDOf(tags); uid != "" && !o.Services[uid] && !o.young(created) {
			out = append(out, it)
		}
	}
	return out
}
