package main

import (
	"context"
	"strings"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/kuryr-k8s/kuryr/pkg/clusternet"
	"github.com/kuryr-k8s/kuryr/pkg/config"
	"github.com/kuryr-k8s/kuryr/pkg/controller/kit"
	"github.com/kuryr-k8s/kuryr/pkg/controller/node"
	"github.com/kuryr-k8s/kuryr/pkg/neutron"
)

// clusterNetworks reads the cloud's networks that reach pods without NAT:
// the subnets on the cluster's router (those of pod_router and of the
// configured subnets) and the pod subnet pool.
func clusterNetworks(cfg *config.Config, nc *neutron.Client, info *neutron.Info) *clusternet.Source {
	nd := cfg.NeutronDefaults
	s := &clusternet.Source{Neutron: nc, Info: info, Router: cfg.NamespaceSubnet.PodRouter,
		Subnets: []string{nd.PodSubnet, nd.ServiceSubnet, nd.NodeSubnet}, TTL: clusterNetworksTTL}
	if pool := cfg.NamespaceSubnet.PodSubnetPool; pool != "" {
		s.Pools = append(s.Pools, pool)
	}
	return s
}

// clusterNetworksTTL: a tenant network attached to the cluster's router is
// taken into account (open-ingress sources, source ranges, nodes' routes)
// within this long.
const clusterNetworksTTL = time.Minute

// newNodeReconciler gives nodes management ports routed to the cluster's
// networks (every subnet on its router, the pods' subnet pool), whichever
// subnet driver runs, and refuse ports when ClusterIPs without a load
// balancer are refused (the ovn provider on an IPv4 service subnet).
func newNodeReconciler(mgr ctrl.Manager, cfg *config.Config, nc *neutron.Client, info *neutron.Info, nets *clusternet.Source,
	refuse bool, rec kit.Recorder) *node.Reconciler {
	nd := cfg.NeutronDefaults
	s := node.Settings{Cluster: cfg.Kubernetes.ClusterName, ProjectID: nd.Project, Subnet: nd.NodeSubnet, ExtraTags: nd.ResourceTags,
		BindTimeout: cfg.Neutron.BindTimeout(), Networks: nets.Read, PodVIFDriver: cfg.Kubernetes.PodVIFDriver,
		Pools: cfg.Kubernetes.VIFPoolDriver == "neutron"}
	if refuse {
		s.RefuseSubnet = nd.ServiceSubnet
	}
	return &node.Reconciler{Client: mgr.GetClient(), Neutron: nc, Info: info, Recorder: rec, Settings: s}
}

// refusing says whether ClusterIPs without a load balancer or an endpoint
// are refused through refuse ports: [kubernetes] refuse_unserved_services,
// with the ovn provider (its VIPs are resolved by ARP only while it serves
// them; amphorae answer for their VIPs themselves) and an IPv4 service
// subnet (the kernel answers no Neighbor Solicitation for local routes).
func refusing(cfg *config.Config, info *neutron.Info) bool {
	if !cfg.Kubernetes.RefuseUnserved || !cfg.Services() {
		return false
	}
	if p := cfg.OctaviaDefaults.Provider; p != "ovn" {
		ctrl.Log.Info("refuse_unserved_services needs the ovn provider: connections to ClusterIPs without a load balancer go unanswered",
			"provider", p)
		return false
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	sub, err := info.Subnet(ctx, cfg.NeutronDefaults.ServiceSubnet)
	if err != nil {
		ctrl.Log.Error(err, "reading the service subnet; refusing as for IPv4")
		return true
	}
	if strings.Contains(sub.CIDR, ":") {
		ctrl.Log.Info("refuse_unserved_services is for IPv4 service subnets: connections to ClusterIPs without a load balancer go unanswered",
			"serviceSubnet", sub.CIDR)
		return false
	}
	return true
}
