package refuse

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/log"

	kuryrv1 "github.com/kuryr-k8s/kuryr/api/v1"
	"github.com/kuryr-k8s/kuryr/pkg/cni/nodeport"
	"github.com/kuryr-k8s/kuryr/pkg/names"
)

// ovsAPI is the OVS seam.
type ovsAPI interface {
	EnsureSystemPort(ctx context.Context, bridge, name, portID, mac string) error
	DelPort(ctx context.Context, name string) error
}

// namespaceAPI is the kernel seam: the refuse namespace and its veth.
type namespaceAPI interface {
	Plug(p *Plan, txChecksumOff bool) (created bool, err error)
	Unplug(hostIf string) error
}

var plugged = prometheus.NewGauge(prometheus.GaugeOpts{
	Name: "kuryr_refuse_port_plugged",
	Help: "1 when this node's refuse port is plugged and configured, 0 when it failed or is absent.",
})

// MustRegister adds the agent's metric to a registry.
func MustRegister(r prometheus.Registerer) { r.MustRegister(plugged) }

// Agent keeps the refuse port plugged as the Node's annotation says:
// level-based, re-applied on every change of the annotation and every
// resync.
type Agent struct {
	OVS           ovsAPI
	NS            namespaceAPI
	Bridge        string
	TxChecksumOff bool

	mu    sync.Mutex
	want  *Plan
	known bool   // the Node has been read: until then nothing is touched
	done  string // the port plugged last
	kick  chan struct{}
}

// NewAgent returns an agent that plugs nothing until SetAnnotations.
func NewAgent(ovs ovsAPI, n namespaceAPI, bridge string, txChecksumOff bool) *Agent {
	return &Agent{OVS: ovs, NS: n, Bridge: bridge, TxChecksumOff: txChecksumOff, kick: make(chan struct{}, 1)}
}

// SetAnnotations takes the Node's annotations; a missing annotation means
// no refuse port. An invalid one is reported and changes nothing.
func (a *Agent) SetAnnotations(logger logr.Logger, annotations map[string]string) {
	if p, ok := nodeport.FromAnnotation(logger, annotations, kuryrv1.RefusePortAnnotation, NewPlan); ok {
		a.set(p)
	}
}

func (a *Agent) set(p *Plan) {
	a.mu.Lock()
	a.want, a.known = p, true
	a.mu.Unlock()
	select {
	case a.kick <- struct{}{}:
	default:
	}
}

// Run applies the plan until ctx ends, retrying failures with backoff.
func (a *Agent) Run(ctx context.Context) error {
	logger := log.FromContext(ctx).WithName("refuse-port")
	nodeport.Reapply(ctx, a.kick, a.apply, func(err error, retryIn time.Duration) {
		plugged.Set(0)
		logger.Error(err, "plugging the node's refuse port", "retryIn", retryIn.String())
	})
	return nil
}

func (a *Agent) apply(ctx context.Context) error {
	a.mu.Lock()
	p, known := a.want, a.known
	a.mu.Unlock()
	if !known {
		return nil // a restarted daemon touches nothing until it knows
	}
	if a.done != "" && p == nil {
		if err := a.unplug(ctx, names.RefuseInterface); err != nil {
			return err
		}
	}
	if p == nil {
		plugged.Set(0)
		return nil
	}
	created, err := a.NS.Plug(p, a.TxChecksumOff)
	if err != nil {
		return err
	}
	if created {
		// A device made anew under an old port's name (a restarted daemon
		// makes a new namespace): ovs-vswitchd's userspace datapath keeps
		// reading the gone one until the port is added again.
		if err := a.OVS.DelPort(ctx, p.HostIf()); err != nil {
			return err
		}
	}
	if err := a.OVS.EnsureSystemPort(ctx, a.Bridge, p.HostIf(), p.PortID, p.MAC.String()); err != nil {
		return err
	}
	plugged.Set(1)
	if a.done != p.PortID {
		log.FromContext(ctx).Info("refuse port plugged", "port", p.PortID, "addresses", fmt.Sprint(p.Addrs), "refused", len(p.Refuse))
		a.done = p.PortID
	}
	return nil
}

func (a *Agent) unplug(ctx context.Context, hostIf string) error {
	if err := a.OVS.DelPort(ctx, hostIf); err != nil {
		return err
	}
	if err := a.NS.Unplug(hostIf); err != nil {
		return err
	}
	log.FromContext(ctx).Info("refuse port removed", "interface", hostIf)
	a.done = ""
	return nil
}
