package kuryrport

import (
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kuryr-k8s/kuryr/pkg/controller/kit"
	"github.com/kuryr-k8s/kuryr/pkg/controller/portgroups"
)

// Options are what a KuryrPort reconciler is built from (New).
type Options struct {
	Client client.Client
	// Neutron serves the reconciler's port requests (batched).
	Neutron  portAPI
	Info     netInfo
	Target   TargetFunc
	Recorder kit.Recorder
	Settings Settings
	// Pool, when set, keeps pre-created ports per node.
	Pool *PoolOptions
	// Startup is what start-up reads: the API server, the cache to wait
	// for, and Neutron's list of the cluster's ports.
	Startup StartupOptions
	// Groups, when set, gives pods' ports further security groups (their
	// policies', their LoadBalancer Services'), through GroupPorts.
	Groups     portgroups.GroupSource
	GroupPorts groupPorts
	// Watches: what else makes a KuryrPort's groups change.
	Watches []kit.Watch
	// Nested, when set, places ports on their node's VM port.
	Nested placer
}

// PoolOptions are a pool's Neutron client, the targets of its nodes and
// its sizes.
type PoolOptions struct {
	Neutron  poolAPI
	Targets  NodeTargetFunc
	Settings PoolSettings
}

// StartupOptions are what start-up reads (see Startup).
type StartupOptions struct {
	Client  client.Reader
	Cache   cacheSyncer
	Neutron portLister
}

// New builds the KuryrPort reconciler and the start-up it waits for (which
// the manager runs, and the sweep waits for too), sharing one ledger and
// the pool, if any.
func New(o Options) (*Reconciler, *Startup) {
	r := &Reconciler{
		Client: o.Client, Neutron: o.Neutron, Info: o.Info, Ledger: NewLedger(), Target: o.Target,
		Recorder: o.Recorder, Settings: o.Settings, Groups: o.Groups, GroupPorts: o.GroupPorts, Watches: o.Watches,
		Nested: o.Nested,
	}
	if o.Pool != nil {
		r.Pool = NewPool(o.Pool.Neutron, o.Pool.Targets, o.Pool.Settings, o.Settings)
		// A pooled port handed to a pod nothing selects then needs no
		// write of its groups.
		r.Pool.Defaults, _ = o.Groups.(portgroups.Defaults)
		if o.Nested != nil {
			r.Pool.Nested = o.Nested
		}
	}
	r.Addresses, _ = o.Groups.(portgroups.AddressGate)
	start := NewStartup(Startup{Client: o.Startup.Client, Cache: o.Startup.Cache, Neutron: o.Startup.Neutron,
		Cluster: o.Settings.Cluster, Ledger: r.Ledger, Pool: r.Pool, PodVIFDriver: o.Settings.PodVIFDriver})
	r.Started = start
	return r, start
}
