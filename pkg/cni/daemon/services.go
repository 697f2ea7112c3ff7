package daemon

// What the node serves of the cluster's Services besides the CNI: node
// ports (to pods and to Octavia), refusals of closed ports, and the
// flushing of stale connection-tracking entries.

import (
	"context"
	"net"
	"net/netip"
	"path/filepath"
	"strings"

	"github.com/go-logr/logr"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	"github.com/kuryr-k8s/kuryr/pkg/cni/conntrack"
	"github.com/kuryr-k8s/kuryr/pkg/cni/nodeport"
	"github.com/kuryr-k8s/kuryr/pkg/cni/refuse"
	"github.com/kuryr-k8s/kuryr/pkg/cni/svcports"
	"github.com/kuryr-k8s/kuryr/pkg/config"
	"github.com/kuryr-k8s/kuryr/pkg/names"
)

// startAgents starts the node-port and refusal agents on the node's cache
// (before it starts: their watches are registered here).
func startAgents(ctx context.Context, n *node) error {
	cfg, c := n.cfg, n.cfg.CNIDaemon
	agent := nodeport.NewAgent(n.ovsdb, nodeport.Linux{}, cfg.NeutronDefaults.OVSBridge, c.DisableTxChecksum)
	refuser := refuse.NewAgent(refuse.RefusePort, n.ovsdb, &refuse.Linux{}, cfg.NeutronDefaults.OVSBridge, c.DisableTxChecksum)
	prober := refuse.NewAgent(refuse.ProbePort, n.ovsdb, &refuse.Linux{}, cfg.NeutronDefaults.OVSBridge, c.DisableTxChecksum)
	if err := nodeport.Watch(ctx, n.informers, agent, refuser, prober); err != nil {
		return err
	}
	go func() { _ = agent.Run(ctx) }()
	go func() { _ = refuser.Run(ctx) }()
	go func() { _ = prober.Run(ctx) }()
	return nil
}

// watchCluster serves what needs the whole cluster's objects, from a cache
// of its own: node ports and stale connection-tracking entries.
func watchCluster(ctx context.Context, n *node) error {
	cfg, logger := n.cfg, n.logger
	cluster, err := NewClusterCache(n.restCfg)
	if err != nil {
		return err
	}
	if err := serveNodePorts(ctx, logger, cfg, cluster, n.reg); err != nil {
		return err
	}
	if cfg.CNIDaemon.ConntrackCleanup && cfg.Services() && cfg.Nested() {
		logger.Info("conntrack_cleanup does nothing on a VM node: the load balancers' connection tracking is the hypervisors'")
	}
	if cfg.CNIDaemon.ConntrackCleanup && cfg.Services() && !cfg.Nested() {
		flusher := conntrack.NewFlusher(vswitchdCtl(cfg.CNIDaemon))
		if err := conntrack.Watch(ctx, cluster, flusher); err != nil {
			return err
		}
		go flusher.Run(ctx)
	}
	go func() {
		if err := cluster.Start(ctx); err != nil {
			logger.Error(err, "the cluster-wide cache stopped: node ports and stale connections are not followed")
		}
	}()
	return nil
}

// vswitchdCtl is ovs-vswitchd's control socket: the configured one, else
// found next to the OVSDB socket.
func vswitchdCtl(c config.CNIDaemon) *conntrack.Unixctl {
	return &conntrack.Unixctl{Path: c.VSwitchdCtl, Dir: filepath.Dir(strings.TrimPrefix(c.OVSDBConnection, "unix:"))}
}

// serveNodePorts starts serving the node ports of the cluster's Services
// on this node, or removes the node-port table when they are not to be
// served ([kubernetes] serve_node_ports = false, or no service_subnet:
// kuryr serves no ClusterIP to send them to).
func serveNodePorts(ctx context.Context, logger logr.Logger, cfg *config.Config, c cache.Cache, reg *Registry) error {
	table := svcports.NFTables{}
	if !cfg.Kubernetes.ServeNodePorts || !cfg.Services() {
		if err := table.Delete(); err != nil {
			logger.Error(err, "removing the node-port table", "table", "inet "+names.NodePortsTable)
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
