package main

import (
	"context"

	"github.com/go-logr/logr"
	"k8s.io/client-go/rest"

	"github.com/kuryr-k8s/kuryr/pkg/cni/svcports"
	"github.com/kuryr-k8s/kuryr/pkg/config"
)

// serveNodePorts starts serving the node ports of the cluster's Services
// on this node, or removes the node-port table when they are not to be
// served ([kubernetes] serve_node_ports = false, or no service_subnet:
// kuryr serves no ClusterIP to send them to).
func serveNodePorts(ctx context.Context, logger logr.Logger, cfg *config.Config, restCfg *rest.Config) error {
	table := svcports.NFTables{}
	if !cfg.Kubernetes.ServeNodePorts || !cfg.Services() {
		if err := table.Delete(); err != nil {
			logger.Error(err, "removing the node-port table", "table", "inet "+svcports.TableName)
		}
		logger.Info("not serving node ports", "serveNodePorts", cfg.Kubernetes.ServeNodePorts, "services", cfg.Services())
		return nil
	}
	c, err := svcports.NewCache(restCfg)
	if err != nil {
		return err
	}
	agent := svcports.NewAgent(cfg.CNIDaemon.NodeName, c, table, &svcports.HealthServers{})
	if err := svcports.Watch(ctx, c, agent); err != nil {
		return err
	}
	go func() { _ = c.Start(ctx) }()
	go func() {
		if c.WaitForCacheSync(ctx) {
			agent.Synced()
		}
	}()
	go func() { _ = agent.Run(ctx) }()
	return nil
}
