// Command kuryr-daemon runs on every node: it watches the node's
// KuryrPorts and serves the CNI requests kuryr-cni forwards, plugging each
// pod into its Neutron port, and serves the Services' node ports. It installs kuryr-cni and the CNI network
// configuration only once it can serve, so a node is not Ready before.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/go-logr/logr"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/kuryr-k8s/kuryr/pkg/cni/daemon"
	"github.com/kuryr-k8s/kuryr/pkg/config"
	"github.com/kuryr-k8s/kuryr/pkg/names"
	"github.com/kuryr-k8s/kuryr/pkg/startup"
	"github.com/kuryr-k8s/kuryr/pkg/version"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "attachments" {
		os.Exit(attachments(os.Args[2:], os.Stdout, os.Stderr))
	}
	opts := startup.Bind(flag.CommandLine)
	showVersion := version.Flag(flag.CommandLine)
	flag.Parse()
	if *showVersion {
		fmt.Println(version.Get().String(names.Daemon))
		return
	}
	logger := opts.Logger(names.Daemon)
	// The signal handler first: a SIGTERM while the configuration loads
	// stops the daemon cleanly too.
	if err := run(ctrl.SetupSignalHandler(), logger, opts); err != nil {
		logger.Error(err, names.Daemon+" stopped")
		os.Exit(1)
	}
}

// loadConfig reads the configuration and fills in what a node knows.
func loadConfig(logger logr.Logger, opts *startup.Options) (*config.Config, error) {
	cfg, err := opts.Load(logger)
	if err != nil {
		return nil, err
	}
	d := &cfg.CNIDaemon
	if d.NodeName == "" {
		d.NodeName = os.Getenv("KUBERNETES_NODE_NAME")
	}
	if d.NodeName == "" {
		h, _ := os.Hostname()
		d.NodeName = strings.ToLower(h)
	}
	if d.CNIBinary == "" {
		exe, _ := os.Executable()
		d.CNIBinary = filepath.Join(filepath.Dir(exe), names.CNI)
	}
	return cfg, cfg.ValidateDaemon()
}

// run loads the configuration and runs the daemon until a signal stops it.
func run(ctx context.Context, logger logr.Logger, opts *startup.Options) error {
	cfg, err := loadConfig(logger, opts)
	if err != nil {
		return fmt.Errorf("invalid configuration: %w", err)
	}
	return daemon.Run(ctx, daemon.Options{Config: cfg, Logger: logger})
}
