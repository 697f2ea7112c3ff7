package daemon

// kuryr-daemon's lifecycle: what it starts, in which order, when it says
// it is ready, and how it stops.

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/kuryr-k8s/kuryr/pkg/cni/plug"
	"github.com/kuryr-k8s/kuryr/pkg/cni/records"
	"github.com/kuryr-k8s/kuryr/pkg/config"
	"github.com/kuryr-k8s/kuryr/pkg/ovs"
	"github.com/kuryr-k8s/kuryr/pkg/retry"
	"github.com/kuryr-k8s/kuryr/pkg/startup"
)

// Options is what Run needs: the configuration, validated for the daemon
// and with what a node knows filled in (its name, kuryr-cni's path), and
// the logger.
type Options struct {
	Config *config.Config
	Logger logr.Logger

	seams
}

// seams are the node's real parts, replaced in tests; nil is the real one.
type seams struct {
	ovs        nodeOVS
	kernel     nodeKernel
	restConfig func(config.Kubernetes) (*rest.Config, error)
	newCache   func(*rest.Config, string) (cache.Cache, error)
	agents     func(context.Context, *node) error // on the node's cache
	cluster    func(context.Context, *node) error // on a cache of its own
}

// nodeOVS is what the CNI server, the readiness and /attachments need of
// OVSDB (*ovs.Client on a node).
type nodeOVS interface {
	ovsAPI
	InterfaceLister
}

// nodeKernel is the node's kernel: plugging, and finding a VM's NIC.
type nodeKernel interface {
	kernelAPI
	DefaultRouteLink() (string, error)
}

// nestedLink is a VM node's NIC: [binding] link_iface, else the
// interface of the default route.
func nestedLink(cfg *config.Config, k nodeKernel) (string, error) {
	if cfg.Binding.LinkIface != "" {
		return cfg.Binding.LinkIface, nil
	}
	link, err := k.DefaultRouteLink()
	if err != nil {
		return "", fmt.Errorf("the VM's NIC: %w", err)
	}
	return link, nil
}

// node is a running daemon's parts.
type node struct {
	cfg       *config.Config
	logger    logr.Logger
	ovsdb     *ovs.Client // the node-port and refusal agents'
	link      string      // a VM node's NIC (nested modes)
	reg       *Registry
	ready     *Readiness
	restCfg   *rest.Config
	informers cache.Cache
}

// Run is kuryr-daemon: it serves health and metrics at once, watches this
// node's KuryrPorts and the cluster's Services, serves CNI requests on its
// socket, and installs kuryr-cni and the CNI configuration once it can
// serve (the node is not Ready before). It returns when ctx ends, after
// draining the requests under way, or on a failure to start.
func Run(ctx context.Context, o Options) error {
	o.defaults()
	c := o.Config.CNIDaemon
	ctx = log.IntoContext(ctx, o.Logger.WithValues("node", c.NodeName))
	n, err := o.start(ctx)
	if err != nil {
		return err
	}
	// The watches and the CNI requests outlive the signal to stop: a
	// stopping daemon drains the requests under way (Drain), which need
	// the KuryrPort watch, and cancels them only after.
	work, stopWork := context.WithCancelCause(context.WithoutCancel(ctx))
	defer stopWork(ErrStopping)
	if err := o.watch(work, n); err != nil {
		return err
	}
	srv, err := o.serveCNI(work, n)
	if err != nil {
		return err
	}
	if err := o.becomeReady(ctx, n); err != nil && !stopped(ctx, err) {
		return err
	}
	<-ctx.Done()
	Drain(ctx, srv, stopWork)
	return nil
}

// stopped says whether err is ctx's end: the daemon is stopping.
func stopped(ctx context.Context, err error) bool {
	return ctx.Err() != nil && errors.Is(err, ctx.Err())
}

func (o *Options) defaults() {
	if o.kernel == nil {
		o.kernel = plug.Kernel{}
	}
	if o.restConfig == nil {
		o.restConfig = startup.RESTConfig
	}
	if o.newCache == nil {
		o.newCache = NewCache
	}
	if o.agents == nil {
		o.agents = startAgents
	}
	if o.cluster == nil {
		o.cluster = watchCluster
	}
}

// start serves health, metrics and /attachments, and makes the node's
// Kubernetes cache.
func (o *Options) start(ctx context.Context) (*node, error) {
	cfg, c := o.Config, o.Config.CNIDaemon
	// One OVSDB session for all; it starts at the first call.
	n := &node{cfg: cfg, logger: o.Logger, reg: NewRegistry(),
		ovsdb: ovs.New(c.OVSDBConnection, Usable(c.WaitForUsable) == UsableOVNInstalled)}
	if o.ovs == nil && cfg.Nested() {
		// A VM node: no OVS; attachments are recorded in files.
		o.ovs = &records.Dir{Path: c.AttachmentsDir}
	}
	if o.ovs == nil {
		o.ovs = n.ovsdb
	}
	if cfg.Nested() {
		link, err := nestedLink(cfg, o.kernel)
		if err != nil {
			return nil, err
		}
		n.link = link
		o.Logger.Info("a VM node: pods get interfaces of its NIC", "mode", cfg.Kubernetes.PodVIFDriver, "link", link)
	}
	n.ready = &Readiness{OVS: o.ovs}
	if err := serveHealth(ctx, cfg, n.ready, AttachmentsHandler(c.NodeName, o.ovs, n.reg)); err != nil {
		return nil, err
	}
	restCfg, err := o.restConfig(cfg.Kubernetes)
	if err != nil {
		return nil, fmt.Errorf("kubernetes client: %w", err)
	}
	// Each ADD used to record its port active on the KuryrPort; the daemon
	// now only reads, but keeps headroom for bursts of watches and lists.
	restCfg.QPS, restCfg.Burst = 20, 40
	n.restCfg = restCfg
	if err := serveMetrics(ctx, cfg, restCfg, o.Logger.WithName("metrics")); err != nil {
		return nil, fmt.Errorf("metrics: %w", err)
	}
	if n.informers, err = o.newCache(restCfg, c.NodeName); err != nil {
		return nil, fmt.Errorf("kubernetes cache: %w", err)
	}
	return n, nil
}

// watch follows this node's KuryrPorts into the registry and starts the
// node-port and refusal agents, then the node's cache, then what serves
// the Services from the whole cluster's objects.
func (o *Options) watch(ctx context.Context, n *node) error {
	if err := WatchKuryrPorts(ctx, n.informers, n.reg); err != nil {
		return err
	}
	if !n.cfg.Nested() { // their ports are plugged into the node's OVS
		if err := o.agents(ctx, n); err != nil {
			return fmt.Errorf("node-port and refusal agents: %w", err)
		}
	}
	go func() { _ = n.informers.Start(ctx) }()
	if err := o.cluster(ctx, n); err != nil {
		return fmt.Errorf("serve the Services: %w", err)
	}
	return nil
}

// serveCNI serves the CNI requests on the daemon's socket, within ctx.
func (o *Options) serveCNI(ctx context.Context, n *node) (*http.Server, error) {
	c := o.Config.CNIDaemon
	d := &Daemon{
		Registry: n.reg, OVS: o.ovs, Kernel: o.kernel, Bridge: o.Config.NeutronDefaults.OVSBridge, Link: n.link,
		PortTimeout: c.VIFAnnotationTimeout, UsableTimeout: c.ActiveTimeout, Usable: Usable(c.WaitForUsable),
		TxChecksumOff: c.DisableTxChecksum, Ready: n.ready.CanServe,
	}
	ln, err := Listen(c.SocketPath)
	if err != nil {
		return nil, err
	}
	srv := NewServer(ctx, d)
	go func() { _ = srv.Serve(ln) }()
	return srv, nil
}

// becomeReady waits for the KuryrPort watch to sync and OVS to answer,
// then installs kuryr-cni and the CNI configuration. It returns ctx's
// error, unwrapped, if ctx ends first.
func (o *Options) becomeReady(ctx context.Context, n *node) error {
	c := o.Config.CNIDaemon
	if !n.informers.WaitForCacheSync(ctx) {
		if err := ctx.Err(); err != nil {
			return err
		}
		return errors.New("KuryrPort watch never synced")
	}
	n.ready.Synced.Store(true)
	// OVS not answering yet (starting, restarting) is waited out: the node
	// stays NotReady meanwhile, as the configuration is not installed.
	if err := retry.Until(ctx, n.logger, "waiting for OVS", time.Second, 30*time.Second,
		func(context.Context) error { return n.ready.CanServe() }); err != nil {
		return err // only ever ctx's
	}
	if err := Install(c.CNIBinary, c.CNIBinDir, c.CNIConfDir, c.SocketPath, c.CNIVersion); err != nil {
		return err
	}
	n.ready.Installed.Store(true)
	n.logger.Info("serving CNI", "socket", c.SocketPath, "confDir", c.CNIConfDir, "usable", c.WaitForUsable)
	return nil
}
