package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	kuryrv1 "github.com/kuryr-k8s/kuryr/api/v1"
	"github.com/kuryr-k8s/kuryr/pkg/config"
	"github.com/kuryr-k8s/kuryr/pkg/controller/cleanup"
	"github.com/kuryr-k8s/kuryr/pkg/controller/kuryrnetwork"
	"github.com/kuryr-k8s/kuryr/pkg/controller/kuryrport"
	"github.com/kuryr-k8s/kuryr/pkg/controller/pod"
	"github.com/kuryr-k8s/kuryr/pkg/neutron"
	"github.com/kuryr-k8s/kuryr/pkg/openstack"
	"github.com/kuryr-k8s/kuryr/pkg/retry"
)

func newManager(restCfg *rest.Config, scheme *runtime.Scheme, cfg *config.Config) (ctrl.Manager, error) {
	restCfg.QPS, restCfg.Burst = 100, 200
	resync := cfg.Controller.ResyncPeriod
	mgr, err := ctrl.NewManager(restCfg, ctrl.Options{
		Scheme:                 scheme,
		Metrics:                metricsserver.Options{BindAddress: fmt.Sprintf(":%d", cfg.PrometheusExporter.ControllerExporterPort)},
		HealthProbeBindAddress: fmt.Sprintf(":%d", cfg.HealthServer.Port),
		ReadinessEndpointName:  "/readyz",
		LivenessEndpointName:   "/livez",
		Cache:                  cache.Options{SyncPeriod: &resync},
		// With controller_ha, standbys keep their caches warm and take over
		// within the lease duration; every reconciler and background task
		// (ledger, sweep, ACTIVE poll) runs only on the leader.
		LeaderElection:                cfg.Kubernetes.ControllerHA,
		LeaderElectionID:              "kuryr-controller-" + cfg.Kubernetes.ClusterName,
		LeaderElectionNamespace:       cfg.Kubernetes.HANamespace,
		LeaderElectionReleaseOnCancel: true,
	})
	if err != nil {
		return nil, fmt.Errorf("controller manager: %w", err)
	}
	openstack.MustRegister(metrics.Registry)
	kuryrport.MustRegister(metrics.Registry)
	return mgr, nil
}

// podWorkers bounds concurrent pod reconciles, which only write KuryrPorts
// (Kubernetes requests, milliseconds each).
const podWorkers = 8

// noEvents stands in for the recorder when [kubernetes] use_events = false.
type noEvents struct{}

func (noEvents) Eventf(_, _ runtime.Object, _, _, _, _ string, _ ...any) {}

func wire(mgr ctrl.Manager, cfg *config.Config, osc *openstack.Clients) error {
	nc := neutron.New(osc.Network)
	info := neutron.NewInfo(nc, 10*time.Minute)
	ledger := kuryrport.NewLedger()
	cluster := cfg.Kubernetes.ClusterName
	var rec kuryrport.Recorder = noEvents{}
	if cfg.Kubernetes.UseEvents {
		rec = mgr.GetEventRecorder("kuryr-controller")
	}
	namespaced := cfg.Kubernetes.PodSubnetsDriver == config.SubnetDriverNamespace
	target := kuryrport.DefaultTarget(info, cfg.NeutronDefaults.PodSubnet)
	if namespaced {
		target = kuryrport.NamespaceTarget(mgr.GetClient())
	}
	nd := cfg.NeutronDefaults
	kp := &kuryrport.Reconciler{
		Client: mgr.GetClient(), Neutron: nc.Batching(cfg.Controller.PortWorkers, cfg.Controller.PortBatchSize), Info: info, Ledger: ledger, Target: target, Recorder: rec,
		Settings: kuryrport.Settings{
			Cluster: cluster, ProjectID: nd.Project, SecurityGroups: nd.PodSecurityGroups, ExtraTags: nd.ResourceTags,
			PortDebug: cfg.Kubernetes.PortDebug, Bridge: nd.OVSBridge, MTUCap: nd.NetworkDeviceMTU,
		},
	}
	pooled := cfg.Kubernetes.VIFPoolDriver == "neutron" && !namespaced
	if pooled {
		kp.Pool = kuryrport.NewPool(nc, kuryrport.PoolSettings{Min: cfg.VIFPool.Min, Max: cfg.VIFPool.Max, Batch: cfg.VIFPool.Batch}, kp.Settings)
	}
	// Enough reconciles wait on the batcher to fill every request it may
	// have in flight.
	if err := kp.SetupWithManager(mgr, cfg.Controller.PortWorkers*cfg.Controller.PortBatchSize); err != nil {
		return err
	}
	pr := &pod.Reconciler{Client: mgr.GetClient(), Namespaced: namespaced, ProjectID: nd.Project}
	if err := pr.SetupWithManager(mgr, podWorkers); err != nil {
		return err
	}
	if namespaced {
		kn := &kuryrnetwork.Reconciler{Client: mgr.GetClient(), Neutron: nc, Recorder: rec, Settings: kuryrnetwork.Settings{
			Cluster: cluster, Router: cfg.NamespaceSubnet.PodRouter, SubnetPool: cfg.NamespaceSubnet.PodSubnetPool, ExtraTags: nd.ResourceTags,
		}}
		if err := kn.SetupWithManager(mgr, cfg.Controller.NetworkWorkers); err != nil {
			return err
		}
	}
	ready := make(chan struct{})
	sweeper := &cleanup.Sweeper{Client: mgr.GetClient(), Neutron: nc, Ledger: ledger, Cluster: cluster,
		Router: cfg.NamespaceSubnet.PodRouter, Period: cfg.Controller.CleanupPeriod, Ready: ready,
		Settle: 2*cfg.Neutron.Timeout + 5*time.Second}
	runnables := []manager.Runnable{
		manager.RunnableFunc(func(ctx context.Context) error { return loadLedger(ctx, mgr, ledger, nc, cluster, ready) }),
		sweeper,
	}
	if pooled {
		sweeper.Pool = kp.Pool
		runnables = append(runnables, manager.RunnableFunc(func(ctx context.Context) error {
			return runPool(ctx, mgr, kp.Pool, target, ready)
		}))
	}
	if cfg.Controller.ActivePoll > 0 {
		runnables = append(runnables, &kuryrport.ActivityWatcher{
			Client: mgr.GetClient(), Neutron: nc, Cluster: cluster, Interval: cfg.Controller.ActivePoll})
	}
	for _, r := range runnables {
		if err := mgr.Add(r); err != nil {
			return err
		}
	}
	if err := mgr.AddReadyzCheck("neutron-ledger", func(*http.Request) error {
		if !ledger.Ready() {
			return errors.New("pod ports not yet read from Neutron")
		}
		return nil
	}); err != nil {
		return err
	}
	return mgr.AddHealthzCheck("ping", func(*http.Request) error { return nil })
}

// loadLedger reads the cluster's ports from Neutron, retrying with backoff
// until Neutron answers, then waits for the caches so the sweep can start.
func loadLedger(ctx context.Context, mgr ctrl.Manager, l *kuryrport.Ledger, nc *neutron.Client, cluster string, ready chan struct{}) error {
	logger := log.FromContext(ctx).WithName("ledger")
	err := retry.Until(ctx, logger, "reading this cluster's ports from Neutron", 500*time.Millisecond, 30*time.Second,
		func(ctx context.Context) error { return l.Load(ctx, nc, cluster) })
	if err != nil {
		return nil // stopping
	}
	logger.Info("ports of this cluster known", "count", l.Len())
	if mgr.GetCache().WaitForCacheSync(ctx) {
		close(ready)
	}
	<-ctx.Done()
	return nil
}

// runPool starts the port pool once the caches and the ledger are ready:
// it adopts the pooled ports no KuryrPort uses, fills every node, then
// keeps them filled.
func runPool(ctx context.Context, mgr ctrl.Manager, pool *kuryrport.Pool, target kuryrport.TargetFunc, ready <-chan struct{}) error {
	select {
	case <-ctx.Done():
		return nil
	case <-ready:
	}
	logger := log.FromContext(ctx).WithName("pool")
	err := retry.Until(ctx, logger, "starting the port pool", time.Second, time.Minute,
		func(ctx context.Context) error { return startPool(ctx, mgr.GetClient(), pool, target) })
	if err != nil {
		return nil // stopping
	}
	return pool.Start(ctx)
}

func startPool(ctx context.Context, c client.Client, pool *kuryrport.Pool, target kuryrport.TargetFunc) error {
	t, _, err := target(ctx, nil)
	if err != nil {
		return err
	}
	var kps kuryrv1.KuryrPortList
	if err := c.List(ctx, &kps); err != nil {
		return err
	}
	inUse := map[string]bool{}
	for _, kp := range kps.Items {
		for _, v := range kp.Status.VIFs {
			inUse[v.PortID] = true
		}
	}
	if err := pool.Load(ctx, inUse); err != nil {
		return err
	}
	pool.SetTarget(t)
	var nodes corev1.NodeList
	if err := c.List(ctx, &nodes); err != nil {
		return err
	}
	for _, n := range nodes.Items {
		pool.Fill(n.Name)
	}
	return nil
}
