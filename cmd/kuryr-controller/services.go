package main

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"sync"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/kuryr-k8s/kuryr/pkg/config"
	"github.com/kuryr-k8s/kuryr/pkg/controller/kuryrport"
	"github.com/kuryr-k8s/kuryr/pkg/controller/loadbalancer"
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
func wireServices(mgr ctrl.Manager, cfg *config.Config, osc *openstack.Clients, nc *neutron.Client, rec kuryrport.Recorder) error {
	if osc.LoadBalancer == nil {
		return errors.New("[neutron_defaults] service_subnet is set but no Octavia (load-balancer) endpoint was found: " +
			"set [octavia] endpoint_override or register Octavia in the catalog")
	}
	od, nd := cfg.OctaviaDefaults, cfg.NeutronDefaults
	var unrestricted []string
	if cfg.NetworkPolicy.Enabled {
		unrestricted = cfg.NetworkPolicy.UnrestrictedIngress
	}
	exposure := podExposure(nc, nd.PodSecurityGroups, unrestricted, nd.ExternalSvcNet)
	svc := &service.Reconciler{Client: mgr.GetClient(), Recorder: rec,
		Subnets: &service.Subnets{Neutron: nc, Project: nd.Project, TTL: subnetsTTL},
		Settings: service.Settings{Provider: od.Provider, Algorithm: od.EffectiveAlgorithm(), SubnetID: nd.ServiceSubnet,
			ProjectID: nd.Project, Class: od.LoadBalancerClass, External: nd.ExternalSvcNet != "",
			RequireSubnet: od.Provider == "ovn", Exposure: exposure, NodePorts: cfg.Kubernetes.ServeNodePorts}}
	if err := svc.SetupWithManager(mgr, 4); err != nil {
		return err
	}
	lb := &loadbalancer.Reconciler{Client: mgr.GetClient(), Octavia: octavia.New(osc.LoadBalancer), Neutron: nc, Groups: nc, Recorder: rec,
		Info: neutron.NewInfo(nc, 10*time.Minute),
		Settings: loadbalancer.Settings{Cluster: cfg.Kubernetes.ClusterName, ExtraTags: nd.ResourceTags,
			ExternalNetwork: nd.ExternalSvcNet, ExternalSubnet: nd.ExternalSvcSubnet, CreateSettle: 2 * cfg.Neutron.Timeout}}
	if cfg.NetworkPolicy.Enabled {
		lb.Settings.Internal = internalPrefixes(nc, cfg)
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
	e, err := service.Exposure(ctx, nc, groups, unrestricted, externalNet)
	if err != nil {
		ctrl.Log.Error(err, "cannot tell whether pod_security_groups admit the external network")
	}
	if e != "" {
		ctrl.Log.Info("loadBalancerSourceRanges are not enforced", "reason", e)
	}
	return e
}

// internalPrefixes gives the cloud's networks that reach pods directly:
// the pod subnet or subnet pool, the service subnet, and every subnet on
// the service subnet's router (the nodes', the VMs' tenant networks), read
// from Neutron at most every internalTTL. With NetworkPolicies on, they
// are cut out of loadBalancerSourceRanges: traffic from them is the
// policies' to decide, and only what comes through the external network
// is the source ranges'. Until they are read, source groups wait (the
// reconcile fails and is retried).
func internalPrefixes(nc *neutron.Client, cfg *config.Config) func(ctx context.Context) ([]netip.Prefix, error) {
	var mu sync.Mutex
	var known []netip.Prefix
	var readAt time.Time
	return func(ctx context.Context) ([]netip.Prefix, error) {
		mu.Lock()
		defer mu.Unlock()
		if known != nil && time.Since(readAt) < internalTTL {
			return known, nil
		}
		cidrs, err := clusterCIDRs(ctx, nc, cfg)
		if err != nil {
			if known != nil {
				return known, nil // the last reading serves while Neutron does not answer
			}
			return nil, err
		}
		out := []netip.Prefix{}
		for _, c := range cidrs {
			if p, err := netip.ParsePrefix(c); err == nil {
				out = append(out, p.Masked())
			}
		}
		known, readAt = out, time.Now()
		return known, nil
	}
}

// internalTTL: a tenant network attached to the cluster's router is cut out
// of source ranges within this long.
const internalTTL = time.Minute

func clusterCIDRs(ctx context.Context, nc *neutron.Client, cfg *config.Config) ([]string, error) {
	nd := cfg.NeutronDefaults
	subnets := []string{nd.PodSubnet, nd.ServiceSubnet}
	if nd.ServiceSubnet != "" {
		router, err := nc.RouterOf(ctx, nd.ServiceSubnet)
		if err != nil {
			return nil, fmt.Errorf("the cluster's router: %w", err)
		}
		if router != "" {
			attached, err := nc.RouterSubnets(ctx, router)
			if err != nil {
				return nil, fmt.Errorf("the cluster's router: %w", err)
			}
			subnets = append(subnets, attached...)
		}
	}
	var cidrs []string
	for _, id := range subnets {
		if id == "" {
			continue
		}
		s, err := nc.GetSubnet(ctx, id)
		if err != nil {
			return nil, fmt.Errorf("the cluster's networks: %w", err)
		}
		cidrs = append(cidrs, s.CIDR)
	}
	if pool := cfg.NamespaceSubnet.PodSubnetPool; pool != "" {
		prefixes, err := nc.SubnetPoolPrefixes(ctx, pool)
		if err != nil {
			return nil, fmt.Errorf("the pods' subnet pool: %w", err)
		}
		cidrs = append(cidrs, prefixes...)
	}
	return cidrs, nil
}
