package nodeport

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/log"

	kuryrv1 "github.com/kuryr-k8s/kuryr/api/v1"
	"github.com/kuryr-k8s/kuryr/pkg/names"
)

// ovsAPI is the OVS seam.
type ovsAPI interface {
	EnsureInternalPort(ctx context.Context, bridge, name, portID, mac string) error
	DelPort(ctx context.Context, name string) error
}

// linkAPI is the netlink seam.
type linkAPI interface {
	Configure(name string, p *Plan, txChecksumOff bool) error
	Exists(name string) bool
	Watch(ctx context.Context, name string, changed func()) error
}

// resync re-applies the plan even when nothing announced a change.
const resync = 10 * time.Second

var plugged = prometheus.NewGauge(prometheus.GaugeOpts{
	Name: "kuryr_node_port_plugged",
	Help: "1 when this node's management port is plugged and configured, 0 when it failed or is absent.",
})

// MustRegister adds the agent's metric to a registry.
func MustRegister(r prometheus.Registerer) { r.MustRegister(plugged) }

// Agent keeps the node's management interface equal to what the Node's
// annotation says: level-based, re-applied on every change of the
// annotation or of the interface, and every resync.
type Agent struct {
	OVS           ovsAPI
	Link          linkAPI
	Bridge        string
	TxChecksumOff bool

	mu    sync.Mutex
	want  *Plan
	known bool // the Node has been read: until then nothing is touched
	done  string
	kick  chan struct{}
	// leftOut: the routes last left out, reported once.
	leftOut string
}

// NewAgent returns an agent that plugs nothing until Set.
func NewAgent(ovs ovsAPI, link linkAPI, bridge string, txChecksumOff bool) *Agent {
	return &Agent{OVS: ovs, Link: link, Bridge: bridge, TxChecksumOff: txChecksumOff, kick: make(chan struct{}, 1)}
}

// SetAnnotations takes the Node's annotations; a missing annotation means
// no management port. An invalid one is reported and changes nothing.
func (a *Agent) SetAnnotations(logger logr.Logger, annotations map[string]string) {
	if p, ok := FromAnnotation(logger, annotations, kuryrv1.NodePortAnnotation, NewPlan); ok {
		a.set(p)
	}
}

// FromAnnotation reads a port annotation of the Node's (a NodePort in
// JSON) and checks it with newPlan: nil when there is none; ok false when
// it is undecodable or invalid (reported: the caller keeps what it has).
func FromAnnotation[P any](logger logr.Logger, annotations map[string]string, key string,
	newPlan func(kuryrv1.NodePort) (*P, error)) (plan *P, ok bool) {
	raw, found := annotations[key]
	if !found {
		return nil, true
	}
	var np kuryrv1.NodePort
	if err := json.Unmarshal([]byte(raw), &np); err != nil {
		logger.Error(err, "ignoring an undecodable port annotation", "annotation", key)
		return nil, false
	}
	p, err := newPlan(np)
	if err != nil {
		logger.Error(err, "ignoring an invalid port annotation", "annotation", key)
		return nil, false
	}
	return p, true
}

func (a *Agent) set(p *Plan) {
	a.mu.Lock()
	a.want, a.known = p, true
	a.mu.Unlock()
	a.signal()
}

func (a *Agent) signal() {
	select {
	case a.kick <- struct{}{}:
	default:
	}
}

// Run applies the plan until ctx ends, retrying failures with backoff.
func (a *Agent) Run(ctx context.Context) error {
	logger := log.FromContext(ctx).WithName("node-port")
	if err := a.Link.Watch(ctx, names.NodePortInterface, a.signal); err != nil {
		logger.Error(err, "not watching the management interface; relying on the periodic resync")
	}
	Reapply(ctx, a.kick, a.apply, func(err error, retryIn time.Duration) {
		plugged.Set(0)
		logger.Error(err, "plugging the node's management port", "retryIn", retryIn.String())
	})
	return nil
}

// Reapply runs apply at once, on every kick and every resync, until ctx
// ends; a failure (reported to failed) is retried with backoff, 1 s
// doubling to 30 s. Level-based agents of the node share it.
func Reapply(ctx context.Context, kick <-chan struct{}, apply func(context.Context) error, failed func(err error, retryIn time.Duration)) {
	backoff := time.Second
	t := time.NewTimer(resync)
	defer t.Stop()
	for {
		wait := resync
		if err := apply(ctx); err != nil {
			failed(err, backoff)
			wait, backoff = backoff, min(2*backoff, 30*time.Second)
		} else {
			backoff = time.Second
		}
		t.Reset(wait)
		select {
		case <-ctx.Done():
			return
		case <-kick:
		case <-t.C:
		}
	}
}

func (a *Agent) apply(ctx context.Context) error {
	a.mu.Lock()
	p, known := a.want, a.known
	a.mu.Unlock()
	switch {
	case !known:
		return nil // a restarted daemon leaves the port alone until it knows
	case p == nil:
		plugged.Set(0)
		if a.done != "" {
			log.FromContext(ctx).Info("node management port removed", "port", a.done)
			a.done = ""
		}
		return a.OVS.DelPort(ctx, names.NodePortInterface)
	}
	if err := a.OVS.EnsureInternalPort(ctx, a.Bridge, names.NodePortInterface, p.PortID, p.MAC.String()); err != nil {
		return err
	}
	if err := waitLink(ctx, a.Link.Exists, names.NodePortInterface, 10*time.Second); err != nil {
		return err
	}
	var left *RoutesLeftOut
	if err := a.Link.Configure(names.NodePortInterface, p, a.TxChecksumOff); errors.As(err, &left) {
		if fmt.Sprint(left.Routes) != a.leftOut {
			log.FromContext(ctx).Error(err, "node management port plugged without some routes")
			a.leftOut = fmt.Sprint(left.Routes)
		}
	} else if err != nil {
		return err
	}
	plugged.Set(1)
	if a.done != p.PortID {
		log.FromContext(ctx).Info("node management port plugged", "port", p.PortID, "addresses", fmt.Sprint(p.Addrs), "routes", len(p.Routes))
		a.done = p.PortID
	}
	return nil
}
