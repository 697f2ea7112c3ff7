// Command kuryr-daemon runs on every node: it watches the node's
// KuryrPorts and serves the CNI requests kuryr-cni forwards, plugging each
// pod into its Neutron port, and serves the Services' node ports. It installs kuryr-cni and the CNI network
// configuration only once it can serve, so a node is not Ready before.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/kuryr-k8s/kuryr/pkg/cni/api"
	"github.com/kuryr-k8s/kuryr/pkg/cni/conntrack"
	"github.com/kuryr-k8s/kuryr/pkg/cni/daemon"
	"github.com/kuryr-k8s/kuryr/pkg/cni/nodeport"
	"github.com/kuryr-k8s/kuryr/pkg/cni/plug"
	"github.com/kuryr-k8s/kuryr/pkg/cni/refuse"
	"github.com/kuryr-k8s/kuryr/pkg/cni/svcports"
	"github.com/kuryr-k8s/kuryr/pkg/config"
	"github.com/kuryr-k8s/kuryr/pkg/health"
	"github.com/kuryr-k8s/kuryr/pkg/ovs"
	"github.com/kuryr-k8s/kuryr/pkg/retry"
	"github.com/kuryr-k8s/kuryr/pkg/startup"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "attachments" {
		os.Exit(attachments(os.Args[2:], os.Stdout, os.Stderr))
	}
	opts := startup.Bind(flag.CommandLine)
	flag.Parse()
	logger := opts.Logger("kuryr-daemon")
	if err := run(ctrl.SetupSignalHandler(), logger, opts); err != nil {
		logger.Error(err, "kuryr-daemon stopped")
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
		d.CNIBinary = filepath.Join(filepath.Dir(exe), "kuryr-cni")
	}
	return cfg, cfg.ValidateDaemon()
}

func run(ctx context.Context, logger logr.Logger, opts *startup.Options) error {
	cfg, err := loadConfig(logger, opts)
	if err != nil {
		return fmt.Errorf("invalid configuration: %w", err)
	}
	c := cfg.CNIDaemon
	ctx = ctrl.LoggerInto(ctx, logger.WithValues("node", c.NodeName))
	ovsdb := ovs.New(c.OVSDBConnection, daemon.Usable(c.WaitForUsable) == daemon.UsableOVNInstalled)
	ready := &daemon.Readiness{OVS: ovsdb}
	reg := daemon.NewRegistry()
	if err := serveHealth(ctx, cfg, ready, daemon.AttachmentsHandler(c.NodeName, ovsdb, reg)); err != nil {
		return err
	}
	restCfg, err := startup.RESTConfig(cfg.Kubernetes)
	if err != nil {
		return fmt.Errorf("kubernetes client: %w", err)
	}
	// Each ADD used to record its port active on the KuryrPort; the daemon
	// now only reads, but keeps headroom for bursts of watches and lists.
	restCfg.QPS, restCfg.Burst = 20, 40
	// The watches and the CNI requests outlive the signal to stop: a
	// stopping daemon drains the requests under way (daemon.Drain), which
	// need the KuryrPort watch, and cancels them only after.
	work, stopWork := context.WithCancelCause(context.WithoutCancel(ctx))
	defer stopWork(daemon.ErrStopping)
	informers, err := daemon.NewCache(restCfg, c.NodeName)
	if err != nil {
		return err
	}
	if err := daemon.WatchKuryrPorts(work, informers, reg); err != nil {
		return err
	}
	agent := nodeport.NewAgent(ovsdb, nodeport.Linux{}, cfg.NeutronDefaults.OVSBridge, c.DisableTxChecksum)
	refuser := refuse.NewAgent(ovsdb, &refuse.Linux{}, cfg.NeutronDefaults.OVSBridge, c.DisableTxChecksum)
	if err := nodeport.Watch(work, informers, agent, refuser); err != nil {
		return err
	}
	go func() { _ = informers.Start(work) }()
	go func() { _ = agent.Run(work) }()
	go func() { _ = refuser.Run(work) }()
	if err := watchCluster(work, logger, cfg, restCfg, reg); err != nil {
		return err
	}
	d := &daemon.Daemon{
		Registry: reg, OVS: ovsdb, Kernel: plug.Kernel{}, Bridge: cfg.NeutronDefaults.OVSBridge,
		PortTimeout: c.VIFAnnotationTimeout, UsableTimeout: c.ActiveTimeout, Usable: daemon.Usable(c.WaitForUsable),
		TxChecksumOff: c.DisableTxChecksum, Ready: ready.CanServe,
	}
	ln, err := daemon.Listen(c.SocketPath)
	if err != nil {
		return err
	}
	srv := daemon.NewServer(work, d)
	go func() { _ = srv.Serve(ln) }()
	if !informers.WaitForCacheSync(ctx) {
		if ctx.Err() != nil {
			daemon.Drain(ctx, srv, stopWork)
			return nil
		}
		return errors.New("KuryrPort watch never synced")
	}
	ready.Synced.Store(true)
	// OVS not answering yet (starting, restarting) is waited out: the node
	// stays NotReady meanwhile, as the configuration is not installed.
	if err := retry.Until(ctx, logger, "waiting for OVS", time.Second, 30*time.Second,
		func(context.Context) error { return ready.CanServe() }); err != nil {
		daemon.Drain(ctx, srv, stopWork) // stopping
		return nil
	}
	if err := daemon.Install(c.CNIBinary, c.CNIBinDir, c.CNIConfDir, c.SocketPath, c.CNIVersion); err != nil {
		return err
	}
	ready.Installed.Store(true)
	logger.Info("serving CNI", "socket", c.SocketPath, "confDir", c.CNIConfDir, "usable", c.WaitForUsable)
	<-ctx.Done()
	daemon.Drain(ctx, srv, stopWork)
	return nil
}

// watchCluster serves what needs the whole cluster's objects, from a cache
// of its own: node ports and stale connection-tracking entries.
func watchCluster(ctx context.Context, logger logr.Logger, cfg *config.Config, restCfg *rest.Config, reg *daemon.Registry) error {
	cluster, err := daemon.NewClusterCache(restCfg)
	if err != nil {
		return err
	}
	if err := serveNodePorts(ctx, logger, cfg, cluster, reg); err != nil {
		return err
	}
	if cfg.CNIDaemon.ConntrackCleanup && cfg.Services() {
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

// serveHealth serves /livez, /readyz and the read-only /attachments from
// the start, and the metrics.
func serveHealth(ctx context.Context, cfg *config.Config, ready *daemon.Readiness, attachments http.Handler) error {
	hs := health.New()
	hs.AddReadyz("cni", ready.Ready)
	hmux := http.NewServeMux()
	hmux.Handle("/", hs.Handler())
	hmux.Handle("GET "+api.AttachmentsPath, attachments)
	if err := health.Start(ctx, fmt.Sprintf(":%d", cfg.CNIHealthServer.Port), hmux); err != nil {
		return err
	}
	reg := prometheus.NewRegistry()
	daemon.MustRegister(reg)
	nodeport.MustRegister(reg)
	refuse.MustRegister(reg)
	conntrack.MustRegister(reg)
	svcports.MustRegister(reg)
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	return health.Start(ctx, fmt.Sprintf(":%d", cfg.PrometheusExporter.CNIExporterPort), mux)
}
