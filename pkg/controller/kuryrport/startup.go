package kuryrport

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	kuryrv1 "github.com/kuryr-k8s/kuryr/api/v1"
	"github.com/kuryr-k8s/kuryr/pkg/names"
	"github.com/kuryr-k8s/kuryr/pkg/neutron"
	"github.com/kuryr-k8s/kuryr/pkg/retry"
)

// portLister lists the cluster's ports.
type portLister interface {
	ListPorts(ctx context.Context, tags []string, status string) ([]neutron.Port, error)
}

// cacheSyncer is the manager's cache, as start-up waits for it.
type cacheSyncer interface {
	WaitForCacheSync(ctx context.Context) bool
}

// Startup loads, once per leadership, what must be known before the first
// KuryrPort is reconciled: the cluster's ports in Neutron (one list call)
// for the ledger and, with pools, the pooled ports and the pods holding
// them. Until Done is closed no KuryrPort is reconciled and no sweep runs:
// a crash-orphaned port cannot be told from a missing one before that, nor
// a pooled port in use from a free one. Then it runs the pool's refills.
type Startup struct {
	// Client reads from the API server, not a cache: a new leader's cache
	// may lack a status its predecessor wrote just before leaving.
	Client  client.Reader
	Cache   cacheSyncer
	Neutron portLister
	Cluster string
	Ledger  *Ledger
	Pool    *Pool
	// PodVIFDriver is the cluster's default mode: VM nodes (nested modes,
	// or their label) get no pool.
	PodVIFDriver string
	done         chan struct{}
}

// NewStartup returns a start-up that has not run yet.
func NewStartup(s Startup) *Startup {
	s.done = make(chan struct{})
	return &s
}

// Done is closed once start-up has completed.
func (s *Startup) Done() <-chan struct{} { return s.done }

// Completed reports whether Done is closed.
func (s *Startup) Completed() bool {
	select {
	case <-s.done:
		return true
	default:
		return false
	}
}

// Start runs until ctx ends (a manager Runnable, on the leader).
func (s *Startup) Start(ctx context.Context) error {
	logger := log.FromContext(ctx).WithName("startup")
	var ports []neutron.Port
	err := retry.Until(ctx, logger, "reading this cluster's ports from Neutron", 500*time.Millisecond, 30*time.Second,
		func(ctx context.Context) error {
			var err error
			ports, err = s.Neutron.ListPorts(ctx, []string{names.ClusterTag(s.Cluster)}, "")
			return err
		})
	if err != nil || !s.Cache.WaitForCacheSync(ctx) {
		return nil // stopping
	}
	s.Ledger.load(ports)
	logger.Info("ports of this cluster known", "pods", s.Ledger.Len(), "ports", len(ports))
	if s.Pool != nil {
		err := retry.Until(ctx, logger, "loading the port pool", time.Second, time.Minute,
			func(ctx context.Context) error { return s.loadPool(ctx, ports) })
		if err != nil {
			return nil
		}
	}
	close(s.done)
	startupSeconds.Set(time.Since(processStart).Seconds())
	logger.Info("start-up complete", "sinceProcessStart", time.Since(processStart).Round(time.Millisecond).String())
	if s.Pool != nil {
		return s.Pool.Start(ctx)
	}
	<-ctx.Done()
	return nil
}

// loadPool gives the pool its ports with their holders, every node to
// fill, and where each node's ports go (so that the first pods after
// start-up take pooled ports).
func (s *Startup) loadPool(ctx context.Context, ports []neutron.Port) error {
	var kps kuryrv1.KuryrPortList
	if err := s.Client.List(ctx, &kps); err != nil {
		return err
	}
	holders := map[string]string{}
	for _, kp := range kps.Items {
		for _, v := range kp.Status.VIFs {
			holders[v.PortID] = kp.Spec.PodUID
		}
	}
	var nodes corev1.NodeList
	if err := s.Client.List(ctx, &nodes); err != nil {
		return err
	}
	s.Pool.load(ports, holders)
	// Every node: one whose pods take no pooled port (nested-macvlan, a
	// label naming no mode) has its free ports, from before a relabel,
	// deleted by the pool's first round.
	for _, n := range nodes.Items {
		s.Pool.Fill(n.Name)
	}
	return s.Pool.resolve(ctx)
}
