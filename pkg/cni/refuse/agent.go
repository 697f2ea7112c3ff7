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
)

// ovsAPI is the OVS seam.
type ovsAPI interface {
	EnsureSystemPort(ctx context.Context, bridge, name, portID, mac string) error
	DelPort(ctx context.Context, name string) error
	DelPortApplied(ctx context.Context, name string) error
}

// namespaceAPI is the kernel seam: the refuse namespace and its veth.
type namespaceAPI interface {
	Plug(p *Plan, txChecksumOff bool) (created bool, err error)
	Unplug(hostIf string) error
}

func pluggedGauge(what string) prometheus.Gauge {
	return prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "kuryr_" + what + "_port_plugged",
		Help: "1 when this node's " + what + " port is plugged and configured, 0 when it failed or is absent.",
	})
}

// MustRegister adds the agents' metrics to a registry.
func MustRegister(r prometheus.Registerer) { r.MustRegister(RefusePort.plugged, ProbePort.plugged) }

// Kind is one sort of port plugged into a namespace of the daemon's own.
type Kind struct {
	// Name labels the metric; What names the port in logs.
	Name, What string
	// Annotation is the Node annotation that describes the port.
	Annotation string
	// NewPlan checks the annotation's port.
	NewPlan func(kuryrv1.NodePort) (*Plan, error)
	plugged prometheus.Gauge
}

// RefusePort: the refuse port (package comment).
var RefusePort = Kind{Name: "refuse", What: "refuse port", Annotation: kuryrv1.RefusePortAnnotation, NewPlan: NewPlan,
	plugged: pluggedGauge("refuse")}

// ProbePort: the port through which kuryr-controller finds out whether
// Neutron enforces a rule's remote address group (ProbePortAnnotation).
var ProbePort = Kind{Name: "probe", What: "address-group probe port", Annotation: kuryrv1.ProbePortAnnotation,
	NewPlan: NewProbePlan, plugged: pluggedGauge("probe")}

// Agent keeps the port of one kind plugged as the Node's annotation says:
// level-based, re-applied on every change of the annotation and every
// resync.
type Agent struct {
	Kind          Kind
	OVS           ovsAPI
	NS            namespaceAPI
	Bridge        string
	TxChecksumOff bool

	mu    sync.Mutex
	want  *Plan
	known bool   // the Node has been read: until then nothing is touched
	done  string // the host interface of the port plugged last
	port  string // and the port's id
	readd bool   // the device was made anew: its OVS port is to be added again
	kick  chan struct{}
}

// NewAgent returns an agent that plugs nothing until SetAnnotations.
func NewAgent(k Kind, ovs ovsAPI, n namespaceAPI, bridge string, txChecksumOff bool) *Agent {
	return &Agent{Kind: k, OVS: ovs, NS: n, Bridge: bridge, TxChecksumOff: txChecksumOff, kick: make(chan struct{}, 1)}
}

// SetAnnotations takes the Node's annotations; a missing annotation means
// no port. An invalid one is reported and changes nothing.
func (a *Agent) SetAnnotations(logger logr.Logger, annotations map[string]string) {
	if p, ok := nodeport.FromAnnotation(logger, annotations, a.Kind.Annotation, a.Kind.NewPlan); ok {
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
	logger := log.FromContext(ctx).WithName(a.Kind.Name + "-port")
	nodeport.Reapply(ctx, a.kick, a.apply, func(err error, retryIn time.Duration) {
		a.Kind.plugged.Set(0)
		logger.Error(err, "plugging the node's "+a.Kind.What, "retryIn", retryIn.String())
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
		if err := a.unplug(ctx, a.done); err != nil {
			return err
		}
	}
	if p == nil {
		a.Kind.plugged.Set(0)
		return nil
	}
	created, err := a.NS.Plug(p, a.TxChecksumOff)
	// A device made anew under an old port's name (a restarted daemon
	// makes a new namespace, the answer MAC changed): ovs-vswitchd's
	// userspace datapath keeps reading the gone one until the port is
	// added again, after it has applied the removal. Remembered until
	// done: a retry after a failure in between finds the device made.
	a.readd = a.readd || created
	if err != nil {
		return err
	}
	if a.readd {
		if err := a.OVS.DelPortApplied(ctx, p.HostIf()); err != nil {
			return err
		}
	}
	if err := a.OVS.EnsureSystemPort(ctx, a.Bridge, p.HostIf(), p.PortID, p.MAC.String()); err != nil {
		return err
	}
	a.readd = false
	a.Kind.plugged.Set(1)
	if a.done != p.HostIf() || a.port != p.PortID {
		log.FromContext(ctx).Info(a.Kind.What+" plugged", "port", p.PortID, "addresses", fmt.Sprint(p.Addrs), "refused", len(p.Refuse))
		a.done, a.port = p.HostIf(), p.PortID
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
	log.FromContext(ctx).Info(a.Kind.What+" removed", "interface", hostIf)
	a.done, a.port = "", ""
	return nil
}
