package main

import (
	"context"
	"os"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/kuryr-k8s/kuryr/pkg/clusternet"
	"github.com/kuryr-k8s/kuryr/pkg/config"
	"github.com/kuryr-k8s/kuryr/pkg/controller/agprobe"
	"github.com/kuryr-k8s/kuryr/pkg/controller/kit"
	"github.com/kuryr-k8s/kuryr/pkg/controller/policy"
	"github.com/kuryr-k8s/kuryr/pkg/controller/portgroups"
	"github.com/kuryr-k8s/kuryr/pkg/neutron"
)

// policyWorkers bounds concurrent NetworkPolicy and KuryrNetworkPolicy
// reconciles each.
const policyWorkers = 8

// wirePolicies: NetworkPolicies become KuryrNetworkPolicy specs, which
// become a security group each and peer groups. It returns the source of
// the groups of the policies that select a pod and of the peers it is one
// of, which the KuryrPort reconciler gives pods' ports, and what makes
// them change.
func wirePolicies(mgr ctrl.Manager, cfg *config.Config, nc *neutron.Client, info *neutron.Info, nets *clusternet.Source, rec kit.Recorder) (
	portgroups.GroupSource, []kit.Watch, *policy.GroupReconciler, error) {
	nd := cfg.NeutronDefaults
	if len(nd.PodSecurityGroups) == 0 {
		ctrl.Log.Info("WARNING: [neutron_defaults] pod_security_groups is empty: with NetworkPolicies on, pods carry only " +
			"policy and open groups, so nothing admits the nodes' health checks to pods a policy isolates; " +
			"give pods a group admitting the nodes (and the service subnet, for hairpin traffic)")
	}
	open := &policy.OpenGroups{Neutron: nc, Cluster: cfg.Kubernetes.ClusterName, ProjectID: nd.Project,
		Unrestricted: cfg.NetworkPolicy.UnrestrictedIngress, Refresh: clusterNetworksTTL,
		Derive: func(ctx context.Context) ([]string, error) {
			n, err := nets.Read(ctx)
			return clusternet.Strings(n.Prefixes()), err
		}}
	if err := mgr.Add(open); err != nil {
		return nil, nil, nil, err
	}
	spec := &policy.SpecReconciler{Client: mgr.GetClient(), Recorder: rec}
	if err := spec.SetupWithManager(mgr, policyWorkers); err != nil {
		return nil, nil, nil, err
	}
	probe := &agprobe.Prober{Client: mgr.GetClient(), Neutron: nc, Info: info, Recorder: rec,
		Settings: agprobe.Settings{Cluster: cfg.Kubernetes.ClusterName, ProjectID: nd.Project, Subnet: probeSubnet(nd),
			Node: os.Getenv("NODE_NAME"), Port: agprobe.DefaultPort, Retry: 10 * time.Minute, Reuse: 24 * time.Hour,
			Disabled: !cfg.NetworkPolicy.AddressGroups, Tags: nd.ResourceTags, OnVM: cfg.Nested(),
			BindTimeout: cfg.Neutron.BindTimeout()}}
	if err := mgr.Add(probe); err != nil {
		return nil, nil, nil, err
	}
	locks := &policy.PeerLocks{}
	groups := &policy.GroupReconciler{Client: mgr.GetClient(), Neutron: nc, Recorder: rec, Mode: probe, Locks: locks,
		Settings: policy.Settings{Cluster: cfg.Kubernetes.ClusterName, ProjectID: nd.Project}}
	if err := groups.SetupWithManager(mgr, policyWorkers); err != nil {
		return nil, nil, nil, err
	}
	pods := policy.PodGroups{Reader: mgr.GetClient(), Open: open,
		Addresses: policy.AddressGate{Reader: mgr.GetClient(), Neutron: nc, Locks: locks, Cluster: cfg.Kubernetes.ClusterName,
			ProjectID: nd.Project}}
	return pods, policy.PortWatches(mgr.GetClient()), groups, nil
}

// probeSubnet: the address-group probe's port goes on the pod subnet (the
// node subnet when pods' subnets are per namespace or node).
func probeSubnet(nd config.NeutronDefaults) string {
	if nd.PodSubnet != "" {
		return nd.PodSubnet
	}
	return nd.NodeSubnet
}
