package main

import (
	"context"
	"errors"
	"net/netip"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/kuryr-k8s/kuryr/pkg/clusternet"
	"github.com/kuryr-k8s/kuryr/pkg/config"
	"github.com/kuryr-k8s/kuryr/pkg/controller/kit"
	"github.com/kuryr-k8s/kuryr/pkg/controller/loadbalancer"
	"github.com/kuryr-k8s/kuryr/pkg/controller/nested"
	"github.com/kuryr-k8s/kuryr/pkg/controller/service"
	"github.com/kuryr-k8s/kuryr/pkg/neutron"
	"github.com/kuryr-k8s/kuryr/pkg/octavia"
	"github.com/kuryr-k8s/kuryr/pkg/openstack"
)

// subnetsTTL: endpoint addresses are matched to Neutron subnets read at
// most this long ago.
const subnetsTTL = time.Minute

// wireServices: Services and EndpointSlices become KuryrLoadBalancer specs,
// which become Octavia load balancers.
func wireServices(mgr ctrl.Manager, cfg *config.Config, osc *openstack.Clients, nc *neutron.Client, nets *clusternet.Source, rec kit.Recorder) error {
	if osc.LoadBalancer == nil {
		return errors.New("[neutron_defaults] service_subnet is set but no Octavia (load-balancer) endpoint was found: " +
			"set [octavia] endpoint_override or register Octavia in the catalog")
	}
	od, nd := cfg.OctaviaDefaults, cfg.NeutronDefaults
	if err := service.CheckClasses(cfg.LoadBalancerClasses); err != nil {
		return err
	}
	var unrestricted []string
	if cfg.NetworkPolicy.Enabled {
		unrestricted = cfg.NetworkPolicy.UnrestrictedIngress
	}
	exposure := podExposure(nc, nd.PodSecurityGroups, unrestricted, nd.ExternalSvcNet)
	svc := &service.Reconciler{Client: mgr.GetClient(), Recorder: rec,
		Subnets: &service.Subnets{Neutron: nc, Project: nd.Project, TTL: subnetsTTL},
		Settings: service.Settings{Provider: od.Provider, Algorithm: od.EffectiveAlgorithm(), SubnetID: nd.ServiceSubnet,
			ProjectID: nd.Project, Class: od.LoadBalancerClass, External: nd.ExternalSvcNet != "",
			RequireSubnet: od.Provider == "ovn", Exposure: exposure, NodePorts: cfg.Kubernetes.ServeNodePorts,
			ExternalIPs: cfg.Kubernetes.ServeExternalIPs, Classes: cfg.LoadBalancerClasses},
		Modes: &nested.Modes{Nodes: mgr.GetClient(), Default: cfg.Kubernetes.PodVIFDriver}}
	if err := svc.SetupWithManager(mgr, 4); err != nil {
		return err
	}
	lb := &loadbalancer.Reconciler{Client: mgr.GetClient(), Octavia: octavia.New(osc.LoadBalancer), Neutron: nc, Groups: nc, Recorder: rec,
		Info: neutron.NewInfo(nc, 10*time.Minute),
		Settings: loadbalancer.Settings{Cluster: cfg.Kubernetes.ClusterName, ExtraTags: nd.ResourceTags,
			ExternalNetwork: nd.ExternalSvcNet, ExternalSubnet: nd.ExternalSvcSubnet, CreateSettle: 2 * cfg.Neutron.Timeout,
			GoneSettle: loadbalancer.GoneSettle}}
	if cfg.NetworkPolicy.Enabled {
		// What comes from the cluster's own networks is the policies' to
		// decide, not the source ranges'.
		lb.Settings.Internal = func(ctx context.Context) ([]netip.Prefix, error) {
			n, err := nets.Read(ctx)
			return n.Prefixes(), err
		}
	}
	return lb.SetupWithManager(mgr, cfg.Controller.ServiceWorkers)
}

// podExposure reads once, at start, whether the pods' own security groups
// or the open-ingress group admit the external network (which makes
// loadBalancerSourceRanges moot); Neutron unreachable then is logged, not
// fatal.
func podExposure(nc *neutron.Client, groups, unrestricted []string, externalNet string) string {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	e, err := neutron.Exposure(ctx, nc, groups, unrestricted, externalNet)
	if err != nil {
		ctrl.Log.Error(err, "cannot tell whether pod_security_groups admit the external network")
	}
	if e != "" {
		ctrl.Log.Info("loadBalancerSourceRanges are not enforced", "reason", e)
	}
	return e
}
