package svcports

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"reflect"
	"strings"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"github.com/kuryr-k8s/kuryr/pkg/names"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
)

// tableAPI is the nftables seam.
type tableAPI interface {
	Replace(rs Ruleset) error
}

// lister reads Services and EndpointSlices (the daemon's cache of them).
type lister interface {
	List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error
}

const (
	// debounce gathers a burst of changes (a rollout, a scale) into one
	// transaction.
	debounce = 200 * time.Millisecond
	// resync re-applies the table even when nothing changed: it repairs
	// drift (someone flushed or deleted the table).
	resync = 30 * time.Second
)

var (
	programmed = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "kuryr_node_ports_programmed",
		Help: "Node ports (protocol and port) in this node's nftables table as last programmed.",
	})
	applyFailures = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "kuryr_node_ports_apply_failures_total",
		Help: "Failures to program this node's node ports (nftables or health check listeners); retried with backoff.",
	})
)

// MustRegister adds the agent's metrics to a registry.
func MustRegister(r prometheus.Registerer) { r.MustRegister(programmed, applyFailures) }

// Agent keeps the node's table equal to what the Services and
// EndpointSlices ask for: level-based, re-applied after every burst of
// changes that changes the ruleset, and every resync whatever happened.
type Agent struct {
	Node   string
	Cache  lister
	Table  tableAPI
	Health *HealthServers
	// Forwarding reads a forwarding sysctl ("net/ipv4/ip_forward"); nil:
	// /proc/sys. The agent never writes it.
	Forwarding func(key string) (string, error)
	// Trusted says which endpoint addresses Local node ports may send to
	// (this node's pods, the node's own addresses); nil: any.
	Trusted func(netip.Addr) bool

	synced  atomic.Bool
	kick    chan struct{}
	applied *Ruleset // what the table holds, nil when unknown
}

// NewAgent returns an agent that touches nothing until Synced.
func NewAgent(node string, c lister, t tableAPI, h *HealthServers) *Agent {
	return &Agent{Node: node, Cache: c, Table: t, Health: h, kick: make(chan struct{}, 1)}
}

// Changed says Services or EndpointSlices changed.
func (a *Agent) Changed() {
	select {
	case a.kick <- struct{}{}:
	default:
	}
}

// Synced says the cache holds every Service and EndpointSlice: until then
// the agent leaves the table alone, as a restarted daemon would otherwise
// remove the node ports it served before for the time of a list.
func (a *Agent) Synced() {
	a.synced.Store(true)
	a.Changed()
}

// Run programs the table until ctx ends, retrying failures with backoff.
// It leaves the table in place when it stops: node ports keep working
// while the daemon restarts.
func (a *Agent) Run(ctx context.Context) error {
	logger := log.FromContext(ctx).WithName("node-ports")
	ctx = log.IntoContext(ctx, logger)
	a.checkForwarding(logger, "net/ipv4/ip_forward")
	defer a.Health.Close()
	backoff, force := time.Second, false
	t := time.NewTimer(resync)
	defer t.Stop()
	for {
		wait := resync
		if err := a.sync(ctx, force); err != nil {
			applyFailures.Inc()
			logger.Error(err, "programming node ports", "retryIn", backoff.String())
			wait, backoff = backoff, min(2*backoff, resync)
		} else {
			backoff = time.Second
		}
		t.Reset(wait)
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			force = true
			continue
		case <-a.kick:
		}
		force = false
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(debounce):
		}
	}
}

// sync programs the desired ruleset: the table when its node ports
// changed (or force), the health check servers always.
func (a *Agent) sync(ctx context.Context, force bool) error {
	if !a.synced.Load() {
		return nil
	}
	rs, err := a.desired(ctx)
	if err != nil {
		return err
	}
	if force || a.applied == nil || !reflect.DeepEqual(rs.Ports, a.applied.Ports) {
		if err := a.apply(ctx, rs); err != nil {
			return err
		}
	}
	if err := a.Health.Sync(rs.Health); err != nil {
		return err
	}
	return nil
}

func (a *Agent) apply(ctx context.Context, rs Ruleset) error {
	logger := log.FromContext(ctx)
	if err := a.Table.Replace(rs); err != nil {
		a.applied = nil // retried in full, even if nothing changes meanwhile
		a.Health.SetHealthy(false)
		return err
	}
	if a.applied == nil || !reflect.DeepEqual(rs.Ports, a.applied.Ports) {
		logger.Info("node ports programmed", "table", "inet "+names.NodePortsTable, "nodePorts", len(rs.Ports), "healthChecks", len(rs.Health))
	}
	a.applied = &rs
	a.Health.SetHealthy(true)
	programmed.Set(float64(len(rs.Ports)))
	families := map[bool]bool{}
	for _, np := range rs.Ports {
		families[np.Target.Addr().Is6()] = true
	}
	if families[false] {
		a.checkForwarding(logger, "net/ipv4/ip_forward")
	}
	if families[true] {
		a.checkForwarding(logger, "net/ipv6/conf/all/forwarding")
	}
	return nil
}

// desired lists the Services, and the EndpointSlices of those whose node
// ports go to local endpoints only (others need none), from the cache.
func (a *Agent) desired(ctx context.Context) (Ruleset, error) {
	var svcs corev1.ServiceList
	if err := a.Cache.List(ctx, &svcs); err != nil {
		return Ruleset{}, fmt.Errorf("list Services: %w", err)
	}
	var eps []discoveryv1.EndpointSlice
	for i := range svcs.Items {
		s := &svcs.Items[i]
		if s.Spec.ExternalTrafficPolicy != corev1.ServiceExternalTrafficPolicyLocal {
			continue
		}
		var l discoveryv1.EndpointSliceList
		if err := a.Cache.List(ctx, &l, client.InNamespace(s.Namespace),
			client.MatchingLabels{discoveryv1.LabelServiceName: s.Name}); err != nil {
			return Ruleset{}, fmt.Errorf("list EndpointSlices of %s/%s: %w", s.Namespace, s.Name, err)
		}
		eps = append(eps, l.Items...)
	}
	return Desired(a.Node, svcs.Items, eps, a.Trusted), nil
}

// checkForwarding logs an error when the node does not forward: node-port
// traffic from other hosts is DNATed to addresses behind the management
// port, which takes forwarding (the node's own traffic works without).
func (a *Agent) checkForwarding(logger logr.Logger, key string) {
	read := a.Forwarding
	if read == nil {
		read = func(key string) (string, error) {
			b, err := os.ReadFile("/proc/sys/" + key)
			return string(b), err
		}
	}
	v, err := read(key)
	switch {
	case err != nil:
		logger.Error(err, "cannot tell whether the node forwards packets", "sysctl", strings.ReplaceAll(key, "/", "."))
	case strings.TrimSpace(v) == "0":
		logger.Error(nil, "node ports cannot be reached from other hosts until forwarding is on: set "+
			strings.ReplaceAll(key, "/", ".")+"=1 on the node", "sysctl", strings.ReplaceAll(key, "/", "."), "value", 0)
	}
}
