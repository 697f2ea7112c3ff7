// Command kuryr-controller watches Kubernetes and reconciles Neutron to
// match: a port for every pod, a network for every namespace (in namespace
// isolation mode). One instance is active per cluster.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"

	kuryrv1 "github.com/kuryr-k8s/kuryr/api/v1"
	"github.com/kuryr-k8s/kuryr/pkg/config"
	"github.com/kuryr-k8s/kuryr/pkg/health"
	"github.com/kuryr-k8s/kuryr/pkg/names"
	"github.com/kuryr-k8s/kuryr/pkg/openstack"
	"github.com/kuryr-k8s/kuryr/pkg/startup"
	"github.com/kuryr-k8s/kuryr/pkg/version"
)

func main() {
	opts := startup.Bind(flag.CommandLine)
	helpConfig := flag.Bool("help-config", false, "print every configuration option with its default, and exit")
	showVersion := version.Flag(flag.CommandLine)
	flag.Parse()
	if *helpConfig {
		fmt.Print(config.Describe())
		return
	}
	if *showVersion {
		fmt.Println(version.Get().String(names.Controller))
		return
	}
	logger := opts.Logger(names.Controller)
	if err := run(ctrl.SetupSignalHandler(), logger, opts); err != nil {
		logger.Error(err, "kuryr-controller stopped")
		os.Exit(1)
	}
}

func run(ctx context.Context, logger logr.Logger, opts *startup.Options) error {
	cfg, err := opts.Load(logger)
	if err == nil {
		err = cfg.ValidateController()
	}
	if err != nil {
		return fmt.Errorf("invalid configuration: %w", err)
	}
	// Health answers from the first second: waiting for Keystone is not
	// being dead.
	hs := health.New()
	var status openStackStatus
	hs.AddReadyz("openstack", status.check)
	if err := health.Start(ctx, fmt.Sprintf(":%d", cfg.HealthServer.Port), hs.Handler(), nil); err != nil {
		return err
	}
	restCfg, err := startup.RESTConfig(cfg.Kubernetes)
	if err != nil {
		return err
	}
	osc, err := connectOpenStack(ctx, logger, &status, time.Second, time.Minute, func(ctx context.Context) (*openstack.Clients, error) {
		return openstack.NewClients(ctx, cfg.Neutron, cfg.Octavia.EndpointOverride)
	})
	if err != nil {
		return err
	}
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return err
	}
	if err := kuryrv1.AddToScheme(scheme); err != nil {
		return err
	}
	mgr, err := newManager(restCfg, scheme, cfg)
	if err != nil {
		return err
	}
	if err := wire(mgr, cfg, osc, hs); err != nil {
		return err
	}
	logger.Info("starting", "cluster", cfg.Kubernetes.ClusterName, "subnetDriver", cfg.Kubernetes.PodSubnetsDriver)
	return mgr.Start(ctx)
}
