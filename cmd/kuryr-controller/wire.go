package main

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/kuryr-k8s/kuryr/pkg/config"
	"github.com/kuryr-k8s/kuryr/pkg/controller/cleanup"
	"github.com/kuryr-k8s/kuryr/pkg/controller/kit"
	"github.com/kuryr-k8s/kuryr/pkg/controller/kuryrnetwork"
	"github.com/kuryr-k8s/kuryr/pkg/controller/kuryrport"
	"github.com/kuryr-k8s/kuryr/pkg/controller/pod"
	"github.com/kuryr-k8s/kuryr/pkg/controller/quota"
	"github.com/kuryr-k8s/kuryr/pkg/health"
	"github.com/kuryr-k8s/kuryr/pkg/leader"
	"github.com/kuryr-k8s/kuryr/pkg/metricsauth"
	"github.com/kuryr-k8s/kuryr/pkg/names"
	"github.com/kuryr-k8s/kuryr/pkg/neutron"
	"github.com/kuryr-k8s/kuryr/pkg/octavia"
	"github.com/kuryr-k8s/kuryr/pkg/openstack"
	"github.com/kuryr-k8s/kuryr/pkg/version"
)

func newManager(restCfg *rest.Config, scheme *runtime.Scheme, cfg *config.Config) (ctrl.Manager, error) {
	restCfg.QPS, restCfg.Burst = 100, 200
	resync := cfg.Controller.ResyncPeriod
	opts := ctrl.Options{
		Scheme:  scheme,
		Metrics: metricsauth.ServerOptions(cfg),
		// /livez and /readyz are served by package health from the start.
		HealthProbeBindAddress: "0",
		// No reconciler reads managedFields (an update without them keeps
		// the server's): not kept for every cached pod.
		Cache: cache.Options{SyncPeriod: &resync, DefaultTransform: cache.TransformStripManagedFields()},
		// With controller_ha, standbys keep their caches warm and take over
		// within the lease duration; every reconciler and background task
		// (start-up, sweep, ACTIVE poll) runs only on the leader.
		LeaderElection:                cfg.Kubernetes.ControllerHA,
		LeaderElectionID:              names.Lease,
		LeaderElectionNamespace:       cfg.Kubernetes.HANamespace,
		LeaderElectionReleaseOnCancel: true,
		LeaseDuration:                 ptr.To(leaseDuration),
	}
	var guard *leader.Guard
	if cfg.Kubernetes.ControllerHA {
		lock, err := newLeaseLock(restCfg, cfg.Kubernetes)
		if err != nil {
			return nil, err
		}
		guard = leader.NewGuard(lock, leaseDuration)
		opts.LeaderElectionResourceLockInterface = guard
	}
	mgr, err := ctrl.NewManager(restCfg, opts)
	if err != nil {
		return nil, fmt.Errorf("controller manager: %w", err)
	}
	if guard != nil {
		// On the leader: a leader frozen past its Lease stops on resuming.
		if err := mgr.Add(guard); err != nil {
			return nil, err
		}
	}
	openstack.MustRegister(metrics.Registry)
	kuryrport.MustRegister(metrics.Registry)
	version.MustRegister(metrics.Registry)
	quota.MustRegister(metrics.Registry)
	cleanup.MustRegister(metrics.Registry)
	return mgr, nil
}

// leaseDuration is controller-runtime's default, stated so that the guard
// and the election agree.
const leaseDuration = 15 * time.Second

// mirrorGrace: the kubelet recreates a deleted mirror pod within its sync
// period (1 min by default).
const mirrorGrace = 2 * time.Minute

// podWorkers bounds concurrent pod reconciles, which only write KuryrPorts
// (Kubernetes requests, milliseconds each).
const podWorkers = 8

// noEvents stands in for the recorder when [kubernetes] use_events = false.
type noEvents struct{}

func (noEvents) Eventf(_, _ runtime.Object, _, _, _, _ string, _ ...any) {}

func wire(mgr ctrl.Manager, cfg *config.Config, osc *openstack.Clients, hs *health.Server) error {
	nc := neutron.New(osc.Network)
	info := neutron.NewInfo(nc, 10*time.Minute)
	cluster := cfg.Kubernetes.ClusterName
	var rec kit.Recorder = noEvents{}
	if cfg.Kubernetes.UseEvents {
		rec = mgr.GetEventRecorder(names.Controller)
	}
	driver := cfg.Kubernetes.PodSubnetsDriver
	namespaced := driver == config.SubnetDriverNamespace
	target, poolTargets := targets(mgr, cfg, info)
	nets, refuse := clusterNetworks(cfg, nc, info), refusing(cfg, info)
	groups, watches, policies, err := portGroups(mgr, cfg, nc, info, nets, rec)
	if err != nil {
		return err
	}
	pl := placer(mgr, cfg, nc)
	opts := kuryrPortOptions(mgr, cfg, nc, info, target, poolTargets, rec, pl)
	if groups != nil {
		opts.Groups, opts.GroupPorts, opts.Watches = groups, nc, watches
	}
	kp, start := kuryrport.New(opts)
	// Enough reconciles wait on the batcher to fill every request it may
	// have in flight.
	if err := kp.SetupWithManager(mgr, cfg.Controller.PortWorkers*cfg.Controller.PortBatchSize); err != nil {
		return err
	}
	pr := &pod.Reconciler{Client: mgr.GetClient(), Namespaced: namespaced, ProjectID: cfg.NeutronDefaults.Project,
		MirrorGrace: mirrorGrace}
	if err := pr.SetupWithManager(mgr, podWorkers); err != nil {
		return err
	}
	// pod_router is required in namespace and node modes; in default mode,
	// KuryrNetworks left from those modes still have their networks
	// removed when they are deleted (none is created).
	if cfg.NamespaceSubnet.PodRouter != "" {
		if err := newNetworkReconciler(mgr, cfg, nc, rec).SetupWithManager(mgr, cfg.Controller.NetworkWorkers); err != nil {
			return err
		}
	}
	if driver == config.SubnetDriverNode {
		nodes := &kuryrnetwork.Nodes{Client: mgr.GetClient(), Namespace: cfg.Kubernetes.HANamespace, ProjectID: cfg.NeutronDefaults.Project}
		if err := nodes.SetupWithManager(mgr); err != nil {
			return err
		}
	}
	if err := newNodeReconciler(mgr, cfg, nc, info, nets, refuse, rec).SetupWithManager(mgr); err != nil {
		return err
	}
	if cfg.Services() {
		if err := wireServices(mgr, cfg, osc, nc, nets, rec); err != nil {
			return err
		}
	}
	sweeper := &cleanup.Sweeper{Client: mgr.GetClient(), Neutron: nc, Ledger: kp.Ledger, Cluster: cluster,
		Router: cfg.NamespaceSubnet.PodRouter, Period: cfg.Controller.CleanupPeriod, Ready: start.Done(),
		Settle: 2*cfg.Neutron.Timeout + 5*time.Second, BindTimeout: cfg.Neutron.BindTimeout(), NodePorts: cfg.NeutronDefaults.NodeSubnet != "",
		RefusePorts: refuse, VMPairs: pl, Binder: nc}
	if kp.Pool != nil {
		sweeper.Pool = kp.Pool
	}
	if cfg.Services() {
		sweeper.Octavia, sweeper.FloatingIPs, sweeper.Groups = octavia.New(osc.LoadBalancer), nc, nc
	}
	if policies != nil {
		sweeper.Policies, sweeper.Peers, sweeper.AddressGroups = nc, policies, nc
	}
	runnables := []manager.Runnable{start, sweeper, recoveryWatch(cfg, osc, nc),
		&quota.Watcher{Neutron: nc, Project: cfg.NeutronDefaults.Project}}
	if cfg.Controller.ActivePoll > 0 {
		runnables = append(runnables, &kuryrport.ActivityWatcher{
			Client: mgr.GetClient(), Neutron: nc, Interval: cfg.Controller.ActivePoll})
	}
	for _, r := range runnables {
		if err := mgr.Add(r); err != nil {
			return err
		}
	}
	return addReadiness(mgr, hs, start)
}

// recoveryWatch probes every OpenStack service kuryr has seen down, every
// 2 s, so that the objects waiting on it are retried as soon as it answers
// (kit.Retry) even when all of them are in a long backoff.
func recoveryWatch(cfg *config.Config, osc *openstack.Clients, nc *neutron.Client) manager.Runnable {
	network := func(ctx context.Context) error {
		_, err := nc.ListNetworks(ctx, []string{names.ProbeTag})
		return err
	}
	probes := map[string]openstack.Probe{openstack.ServiceNetwork: network, openstack.ServiceIdentity: network}
	if cfg.Services() {
		oc := octavia.New(osc.LoadBalancer)
		probes[openstack.ServiceLoadBalancer] = func(ctx context.Context) error {
			_, err := oc.FindLoadBalancers(ctx, []string{names.ProbeTag})
			return err
		}
	}
	return manager.RunnableFunc(func(ctx context.Context) error {
		h := openstack.Availability()
		h.OnRecovery(func(service string, downFor time.Duration) {
			ctrl.Log.Info("OpenStack service answers again: the objects waiting on it are retried now",
				"service", service, "unavailableFor", downFor.Round(time.Second).String())
		})
		h.Watch(ctx, recoveryProbeInterval, probes)
		return nil
	})
}

const recoveryProbeInterval = 2 * time.Second

// targets says where pods' ports go, and where each node's pooled ports
// go (nil: pools are not possible, in namespace mode): the default subnet,
// the namespace's network, or the node's network (its KuryrNetwork in the
// controller's namespace).
func targets(mgr ctrl.Manager, cfg *config.Config, info *neutron.Info) (kuryrport.TargetFunc, kuryrport.NodeTargetFunc) {
	switch cfg.Kubernetes.PodSubnetsDriver {
	case config.SubnetDriverNamespace:
		return kuryrport.NamespaceTarget(mgr.GetClient()), nil
	case config.SubnetDriverNode:
		ns := cfg.Kubernetes.HANamespace
		return kuryrport.NodeTarget(mgr.GetClient(), ns), kuryrport.NodeNetworks(mgr.GetClient(), ns)
	}
	t := kuryrport.DefaultTarget(info, cfg.NeutronDefaults.PodSubnet)
	return t, kuryrport.EveryNode(t)
}

// secondsPerPort is what Neutron is assumed to take per port of a bulk
// request until it has answered one (0.25-0.3 s with ML2/OVN 21 on 2 idle
// cores); bulk requests are then sized by its pace to take at most half of
// [neutron] timeout: one that times out may still commit, and each costs a
// lookup and leaves duplicates for the sweep.
const secondsPerPort = 300 * time.Millisecond

func portBatching(nc *neutron.Client, cfg *config.Config) *neutron.BatchingClient {
	return nc.Batching(cfg.Controller.PortWorkers, cfg.Controller.PortBatchSize, cfg.Neutron.Timeout/2, secondsPerPort)
}

func newNetworkReconciler(mgr ctrl.Manager, cfg *config.Config, nc *neutron.Client, rec kit.Recorder) *kuryrnetwork.Reconciler {
	return &kuryrnetwork.Reconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Neutron: nc, Recorder: rec, Settings: kuryrnetwork.Settings{
		Cluster: cfg.Kubernetes.ClusterName, Router: cfg.NamespaceSubnet.PodRouter,
		SubnetPool: cfg.NamespaceSubnet.PodSubnetPool, ExtraTags: cfg.NeutronDefaults.ResourceTags,
		Namespaces: cfg.Kubernetes.PodSubnetsDriver == config.SubnetDriverNamespace,
		Nodes:      cfg.Kubernetes.PodSubnetsDriver == config.SubnetDriverNode,
	}}
}

// addReadiness: a standby is ready once its caches are warm (it can take
// over); the leader once start-up has loaded what it must know.
func addReadiness(mgr ctrl.Manager, hs *health.Server, start *kuryrport.Startup) error {
	synced := &cacheWatch{cache: mgr.GetCache()}
	if err := mgr.Add(synced); err != nil {
		return err
	}
	hs.AddReadyz("informers", func() error {
		if !synced.done.Load() {
			return errors.New("caches of the Kubernetes objects not synced yet")
		}
		return nil
	})
	hs.AddReadyz("leader", func() error {
		select {
		case <-mgr.Elected():
		default:
			return nil // a standby
		}
		if !start.Completed() {
			return errors.New("leading, but this cluster's ports are not read from Neutron yet")
		}
		return nil
	})
	return nil
}

// cacheWatch records when the caches have synced. It runs on standbys too
// (NeedLeaderElection false): their readiness depends on it.
type cacheWatch struct {
	cache interface{ WaitForCacheSync(context.Context) bool }
	done  atomic.Bool
}

// Start implements manager.Runnable.
func (w *cacheWatch) Start(ctx context.Context) error {
	if w.cache.WaitForCacheSync(ctx) {
		w.done.Store(true)
	}
	<-ctx.Done()
	return nil
}

// NeedLeaderElection implements manager.LeaderElectionRunnable.
func (w *cacheWatch) NeedLeaderElection() bool { return false }
