// Command kuryr-daemon runs on every node: it watches the node's
// KuryrPorts and serves the CNI requests kuryr-cni forwards, plugging each
// pod into its Neutron port. It installs kuryr-cni and the CNI network
// configuration only once it can serve, so a node is not Ready before.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	toolscache "k8s.io/client-go/tools/cache"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kuryrv1 "github.com/kuryr-k8s/kuryr/api/v1"
	"github.com/kuryr-k8s/kuryr/pkg/cni/daemon"
	"github.com/kuryr-k8s/kuryr/pkg/cni/plug"
	"github.com/kuryr-k8s/kuryr/pkg/config"
	"github.com/kuryr-k8s/kuryr/pkg/kpstatus"
	"github.com/kuryr-k8s/kuryr/pkg/retry"
	"github.com/kuryr-k8s/kuryr/pkg/startup"
)

func main() {
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
	reg := daemon.NewRegistry()
	kpCache, kc, err := watchKuryrPorts(ctx, cfg, reg)
	if err != nil {
		return err
	}
	ovs := plug.NewOVS(c.OVSDBConnection, daemon.Usable(c.WaitForUsable) == daemon.UsableOVNInstalled)
	var installed atomic.Bool
	d := &daemon.Daemon{
		Registry: reg, OVS: ovs, Kernel: daemon.Linux{}, Bridge: cfg.NeutronDefaults.OVSBridge,
		PortTimeout: c.VIFAnnotationTimeout, UsableTimeout: c.ActiveTimeout, Usable: daemon.Usable(c.WaitForUsable),
		TxChecksumOff: c.DisableTxChecksum,
		MarkActive: func(ctx context.Context, ns, name string) error {
			return kpstatus.MarkActive(ctx, kc, ns, name)
		},
	}
	var synced atomic.Bool
	// Ready answers at once (STATUS, /readyz): before the first sync it says
	// so rather than waiting for it.
	d.Ready = func() error {
		if !synced.Load() {
			return errors.New("KuryrPort watch not synced yet")
		}
		if _, err := ovs.Ports(context.Background()); err != nil {
			return fmt.Errorf("OVS: %w", err)
		}
		return nil
	}
	ln, err := daemon.Listen(c.SocketPath)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: d, BaseContext: func(_ net.Listener) context.Context { return ctx }}
	go func() { _ = srv.Serve(ln) }()
	go serveHealth(ctx, cfg, d, &installed)
	if !kpCache.WaitForCacheSync(ctx) {
		return errors.New("KuryrPort watch never synced")
	}
	synced.Store(true)
	// OVS not answering yet (starting, restarting) is waited out: the node
	// stays NotReady meanwhile, as the configuration is not installed.
	if err := retry.Until(ctx, logger, "waiting for OVS", time.Second, 30*time.Second,
		func(context.Context) error { return d.Ready() }); err != nil {
		return nil // stopping
	}
	if err := daemon.Install(c.CNIBinary, c.CNIBinDir, c.CNIConfDir, c.SocketPath, c.CNIVersion); err != nil {
		return err
	}
	installed.Store(true)
	logger.Info("serving CNI", "node", c.NodeName, "socket", c.SocketPath, "confDir", c.CNIConfDir, "usable", c.WaitForUsable)
	<-ctx.Done()
	return srv.Shutdown(context.Background())
}

// watchKuryrPorts keeps the registry equal to this node's KuryrPorts.
func watchKuryrPorts(ctx context.Context, cfg *config.Config, reg *daemon.Registry) (cache.Cache, client.Client, error) {
	restCfg, err := startup.RESTConfig(cfg.Kubernetes)
	if err != nil {
		return nil, nil, fmt.Errorf("kubernetes client: %w", err)
	}
	// Each ADD records its port active on the KuryrPort before answering:
	// at client-go's default 5 requests/s a burst of pods on one node
	// waited seconds for it.
	restCfg.QPS, restCfg.Burst = 50, 100
	scheme := runtime.NewScheme()
	if err := kuryrv1.AddToScheme(scheme); err != nil {
		return nil, nil, err
	}
	kc, err := client.New(restCfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, nil, err
	}
	sel := labels.SelectorFromSet(labels.Set{kuryrv1.NodeNameLabel: cfg.CNIDaemon.NodeName})
	c, err := cache.New(restCfg, cache.Options{Scheme: scheme, ByObject: map[client.Object]cache.ByObject{
		&kuryrv1.KuryrPort{}: {Label: sel},
	}})
	if err != nil {
		return nil, nil, err
	}
	inf, err := c.GetInformer(ctx, &kuryrv1.KuryrPort{})
	if err != nil {
		return nil, nil, err
	}
	set := func(o any) {
		if kp, ok := o.(*kuryrv1.KuryrPort); ok {
			reg.Set(kp)
		}
	}
	_, err = inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    set,
		UpdateFunc: func(_, o any) { set(o) },
		DeleteFunc: func(o any) {
			if t, ok := o.(toolscache.DeletedFinalStateUnknown); ok {
				o = t.Obj
			}
			if kp, ok := o.(*kuryrv1.KuryrPort); ok {
				reg.Remove(kp.Namespace, kp.Name)
			}
		},
	})
	if err != nil {
		return nil, nil, err
	}
	go func() { _ = c.Start(ctx) }()
	return c, kc, nil
}

func serveHealth(ctx context.Context, cfg *config.Config, d *daemon.Daemon, installed *atomic.Bool) {
	reg := prometheus.NewRegistry()
	daemon.MustRegister(reg)
	mux := http.NewServeMux()
	mux.HandleFunc("/livez", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		err := d.Ready()
		if err == nil && !installed.Load() {
			err = errors.New("CNI configuration not installed yet")
		}
		if err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ok")
	})
	go serve(ctx, fmt.Sprintf(":%d", cfg.CNIHealthServer.Port), mux)
	metrics := http.NewServeMux()
	metrics.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	serve(ctx, fmt.Sprintf(":%d", cfg.PrometheusExporter.CNIExporterPort), metrics)
}

func serve(ctx context.Context, addr string, h http.Handler) {
	s := &http.Server{Addr: addr, Handler: h}
	go func() { <-ctx.Done(); _ = s.Close() }()
	if err := s.ListenAndServe(); err != nil && !errors.Is(err, http.ErrServerClosed) {
		ctrl.Log.Error(err, "health/metrics server", "addr", addr)
	}
}
