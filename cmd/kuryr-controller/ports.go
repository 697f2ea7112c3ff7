package main

import (
	"context"

	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/kuryr-k8s/kuryr/pkg/clusternet"
	"github.com/kuryr-k8s/kuryr/pkg/config"
	"github.com/kuryr-k8s/kuryr/pkg/controller/kit"
	"github.com/kuryr-k8s/kuryr/pkg/controller/kuryrport"
	"github.com/kuryr-k8s/kuryr/pkg/controller/loadbalancer"
	"github.com/kuryr-k8s/kuryr/pkg/controller/nested"
	"github.com/kuryr-k8s/kuryr/pkg/controller/policy"
	"github.com/kuryr-k8s/kuryr/pkg/controller/portgroups"
	"github.com/kuryr-k8s/kuryr/pkg/neutron"
)

// kuryrPortOptions are the KuryrPort reconciler's options but its groups.
func kuryrPortOptions(mgr ctrl.Manager, cfg *config.Config, nc *neutron.Client, info *neutron.Info,
	target kuryrport.TargetFunc, poolTargets kuryrport.NodeTargetFunc, rec kit.Recorder, pl *nested.Placer) kuryrport.Options {
	nd := cfg.NeutronDefaults
	o := kuryrport.Options{
		Client: mgr.GetClient(), Neutron: portBatching(nc, cfg),
		Info: info, Target: target, Recorder: rec,
		Settings: kuryrport.Settings{
			Cluster: cfg.Kubernetes.ClusterName, ProjectID: nd.Project, SecurityGroups: nd.PodSecurityGroups,
			ExtraTags: nd.ResourceTags, PortDebug: cfg.Kubernetes.PortDebug, Bridge: nd.OVSBridge, MTUCap: nd.NetworkDeviceMTU,
			BindTimeout: cfg.Neutron.BindTimeout(), PodVIFDriver: cfg.Kubernetes.PodVIFDriver,
		},
		Startup: kuryrport.StartupOptions{Client: mgr.GetAPIReader(), Cache: mgr.GetCache(), Neutron: nc},
	}
	o.Nested = pl
	if cfg.Kubernetes.VIFPoolDriver == "neutron" && poolTargets != nil {
		o.Pool = &kuryrport.PoolOptions{Neutron: nc, Targets: poolTargets,
			Settings: kuryrport.PoolSettings{Min: cfg.VIFPool.Min, Max: cfg.VIFPool.Max, Batch: cfg.VIFPool.Batch}}
	}
	return o
}

// placer puts the ports of pods on VM nodes (pod_vif_driver, or the
// node's label) on their VM's port.
func placer(mgr ctrl.Manager, cfg *config.Config, nc *neutron.Client) *nested.Placer {
	return nested.NewPlacer(nc, mgr.GetClient(), cfg.Kubernetes.PodVIFDriver, cfg.PodVIFNested.WorkerNodesSubnets,
		cfg.PodVIFNested.RevUpdateAttempts)
}

// portGroups are the sources of the groups pods' ports carry beyond
// pod_security_groups (LoadBalancer Services' source groups, policies'
// groups; nil: none) and what makes them change. With policies on, it
// sets up the policy reconcilers (policies).
func portGroups(mgr ctrl.Manager, cfg *config.Config, nc *neutron.Client, info *neutron.Info, nets *clusternet.Source, rec kit.Recorder) (
	src portgroups.GroupSource, watches []kit.Watch, policies *policy.GroupReconciler, err error) {
	if cfg.Services() {
		// LoadBalancer Services' source groups go onto their pods' ports.
		src = loadbalancer.ServiceGroups{Reader: mgr.GetClient()}
	}
	if cfg.NetworkPolicy.Enabled {
		var podGroups portgroups.GroupSource
		if podGroups, watches, policies, err = wirePolicies(mgr, cfg, nc, info, nets, rec); err != nil {
			return nil, nil, nil, err
		}
		sources := portgroups.Sources{podGroups}
		if src != nil {
			sources = append(sources, src)
		}
		src = sources
	}
	if src == nil {
		return nil, nil, policies, nil
	}
	w, err := loadbalancer.ServiceGroupsWatch(context.Background(), mgr)
	if err != nil {
		return nil, nil, nil, err
	}
	return src, append([]kit.Watch{w}, watches...), policies, nil
}
