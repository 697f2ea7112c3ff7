package main

import (
	"context"
	"net"
	"net/netip"

	"github.com/go-logr/logr"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	"github.com/kuryr-k8s/kuryr/pkg/cni/daemon"
	"github.com/kuryr-k8s/kuryr/pkg/cni/svcports"
	"github.com/kuryr-k8s/kuryr/pkg/config"
)

// serveNodePorts starts serving the node ports of the cluster's Services
// on this node, or removes the node-port table when they are not to be
// served ([kubernetes] serve_node_ports = false, or no service_subnet:
// kuryr serves no ClusterIP to send them to).
func serveNodePorts(ctx context.Context, logger logr.Logger, cfg *config.Config, c cache.Cache, reg *daemon.Registry) error {
	table := svcports.NFTables{}
	if !cfg.Kubernetes.ServeNodePorts || !cfg.Services() {
		if err := table.Delete(); err != nil {
			logger.Error(err, "removing the node-port table", "table", "inet "+svcports.TableName)
		}
		logger.Info("not serving node ports", "serveNodePorts", cfg.Kubernetes.ServeNodePorts, "services", cfg.Services())
		return nil
	}
	agent := svcports.NewAgent(cfg.CNIDaemon.NodeName, c, table, &svcports.HealthServers{})
	// Local node ports send to this node's pods and to the node itself
	// (host-network pods), never to whatever an EndpointSlice names.
	agent.Trusted = func(ip netip.Addr) bool { return reg.Holds(ip) || ownAddress(ip) }
	if err := svcports.Watch(ctx, c, agent); err != nil {
		return err
	}
	go func() {
		if c.WaitForCacheSync(ctx) {
			agent.Synced()
		}
	}()
	go func() { _ = agent.Run(ctx) }()
	return nil
}

// ownAddress says whether ip is an address of one of the node's interfaces.
func ownAddress(ip netip.Addr) bool {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return false
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok {
			if own, ok := netip.AddrFromSlice(n.IP); ok && own.Unmap() == ip {
				return true
			}
		}
	}
	return false
}
