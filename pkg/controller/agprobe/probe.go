// Package agprobe finds out whether Neutron enforces a security group
// rule's remote address group, by sending traffic through one. ML2/OVN
// accepts such rules on every release and lists the extension
// (security-groups-remote-address-group) on every release, but before
// Neutron 26.0.0 (24.2.0/25.2.0 backports) it writes the rule's ACL
// without the address group's match: the rule admits everyone. Nothing in
// the API tells the two apart, so the leader asks the dataplane once at
// start: a probe port on the pod subnet, bound to the controller's own
// node and plugged there by its kuryr-daemon (ProbePortAnnotation) into a
// namespace where nothing listens, carries a security group admitting its
// TCP port only from an address group. The controller connects to it from
// its node first while the group holds every address (a reset must come
// back: the port is plugged and the path works) and then while it holds
// none: connections that then time out mean the address group is
// enforced; resets all along mean it is not. NetworkPolicy peers are
// address groups only when it is enforced (package policy).
package agprobe

import (
	"context"
	"encoding/json"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	kuryrv1 "github.com/kuryr-k8s/kuryr/api/v1"
	"github.com/kuryr-k8s/kuryr/pkg/controller/kit"
)

// DefaultPort is the TCP port the probe connects to (discard: nothing
// listens on it in the probe's namespace).
const DefaultPort = 9

// Result is a probe's answer (kuryrv1.AddressGroupProbe).
type Result = kuryrv1.AddressGroupProbe

// The verdicts.
const (
	Enforced    = kuryrv1.AddressGroupsEnforced
	NotEnforced = kuryrv1.AddressGroupsNotEnforced
	Unknown     = kuryrv1.AddressGroupsUnknown
)

// Settings are what the probe is made with.
type Settings struct {
	Cluster, ProjectID string
	// Subnet the probe port is on (the pod subnet).
	Subnet string
	// Node the controller runs on (NODE_NAME); "" leaves the answer
	// Unknown.
	Node string
	// Port is the TCP port connected to; nothing listens on it.
	Port int
	// Retry: an Unknown answer is probed again after this long.
	Retry time.Duration
	// Disabled: [network_policy] address_groups = false; peers stay
	// security groups and nothing is probed.
	Disabled bool
	// Reuse: a definite answer recorded on a node less than this long ago
	// is taken without probing again (a restarted controller writes
	// nothing); 0 probes at every start.
	Reuse time.Duration
	Tags  []string
	// OnVM: the controller's nodes are VMs (nested modes): nothing can be
	// bound to them, so nothing is probed and peers stay security groups.
	OnVM bool
	// BindTimeout: how long Neutron may take to create and bind the probe's
	// port (neutron.CreateFinished).
	BindTimeout time.Duration
}

// Prober runs the probe on the leader and serves its answer.
type Prober struct {
	Client   client.Client
	Neutron  neutronAPI
	Info     subnetInfo
	Recorder kit.Recorder
	Settings Settings
	// Dial connects; nil: a TCP dial.
	Dial func(ctx context.Context, addr string, timeout time.Duration) error
	// Pause waits between attempts; nil: a timer.
	Pause func(ctx context.Context, d time.Duration)
	// Timing: zero is DefaultTiming.
	Timing Timing

	mu      sync.Mutex
	result  Result
	decided bool
	changes chan struct{}
	once    sync.Once
}

// NeedLeaderElection: only the leader probes (it owns the probe's
// objects).
func (p *Prober) NeedLeaderElection() bool { return true }

// AddressGroups implements policy.PeerMode.
func (p *Prober) AddressGroups() (use, decided bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.result.AddressGroups, p.decided
}

// Result is the last answer (zero until the first).
func (p *Prober) Result() Result {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.result
}

// Changes implements policy.ModeChanges: a value whenever the answer
// changes whether peers are address groups.
func (p *Prober) Changes() <-chan struct{} {
	p.once.Do(func() { p.changes = make(chan struct{}, 1) })
	return p.changes
}

// Start probes until it has a definite answer (an Unknown one is given at
// once, and probed again every Retry), unless a recent definite answer is
// recorded, or probing is off. It first deletes what a crashed probe left.
func (p *Prober) Start(ctx context.Context) error {
	logger := log.FromContext(ctx).WithName("address-group-probe")
	ctx = log.IntoContext(ctx, logger)
	p.cleanup(ctx)
	last, found := p.recorded(ctx)
	if p.Settings.Disabled {
		r := Result{Verdict: Unknown, Off: true, Detail: "not probed: [network_policy] address_groups = false"}
		if found { // kept for when it is turned on again
			r.Verdict, r.Detail, r.Time, r.Off = last.Verdict, last.Detail, last.Time, true
		}
		p.set(ctx, r)
		return nil
	}
	if found {
		if last.Off {
			last.Off = false
			p.set(ctx, last) // doctor reads the node's record
			return nil
		}
		last.AddressGroups = last.Verdict == Enforced
		p.decide(last)
		logger.Info("NetworkPolicy peers decided by the last probe", "verdict", last.Verdict, "addressGroups", last.AddressGroups,
			"probed", last.Time, "detail", last.Detail)
		return nil
	}
	for {
		r, final := p.run(ctx)
		if ctx.Err() != nil {
			return nil
		}
		p.set(ctx, r)
		if r.Verdict != Unknown || final {
			return nil
		}
		p.pause(ctx, p.Settings.Retry)
		if ctx.Err() != nil {
			return nil
		}
	}
}

// run probes; final: it cannot run in this configuration (no node, no
// subnet): trying again would not help.
func (p *Prober) run(ctx context.Context) (r Result, final bool) {
	if p.Settings.OnVM {
		return Result{Verdict: Unknown, Detail: "not probed: the nodes are VMs (pod_vif_driver nested-*), " +
			"where no probe port can be bound"}, true
	}
	if p.Settings.Node == "" {
		return Result{Verdict: Unknown, Detail: "not probed: the controller does not know its node (set NODE_NAME from spec.nodeName)"}, true
	}
	if p.Settings.Subnet == "" {
		return Result{Verdict: Unknown, Detail: "not probed: no [neutron_defaults] pod_subnet or node_subnet to put the probe port on"}, true
	}
	v, detail := p.probe(ctx)
	return Result{Verdict: v, Detail: detail}, false
}

// recorded is the newest definite answer recorded on a node within
// Settings.Reuse (also one kept while probing was off).
func (p *Prober) recorded(ctx context.Context) (Result, bool) {
	if p.Settings.Reuse <= 0 {
		return Result{}, false
	}
	var nodes corev1.NodeList
	if err := p.Client.List(ctx, &nodes); err != nil {
		log.FromContext(ctx).Error(err, "reading the last probe's answer from the nodes: probing again")
		return Result{}, false
	}
	var last Result
	for _, n := range nodes.Items {
		var r Result
		// A record from the future is not the probe's (another writer's,
		// or a clock gone wrong): it would be reused forever.
		if json.Unmarshal([]byte(n.Annotations[kuryrv1.AddressGroupProbeAnnotation]), &r) == nil && r.Verdict != Unknown &&
			r.Time.After(last.Time) && !r.Time.After(time.Now().Add(time.Minute)) {
			last = r
		}
	}
	return last, !last.Time.IsZero() && time.Since(last.Time) < p.Settings.Reuse
}

// decide takes an answer in memory, telling the reconcilers if it changes
// whether peers are address groups.
func (p *Prober) decide(r Result) {
	p.mu.Lock()
	changed := !p.decided || p.result.AddressGroups != r.AddressGroups
	p.result, p.decided = r, true
	p.mu.Unlock()
	if changed {
		select {
		case p.changesChan() <- struct{}{}:
		default:
		}
	}
}

// set records a new answer: in memory, in the log, as an Event and an
// annotation of the node probed from.
func (p *Prober) set(ctx context.Context, r Result) {
	if r.Time.IsZero() {
		r.Time = time.Now().UTC().Truncate(time.Second)
	}
	r.AddressGroups = r.Verdict == Enforced && !r.Off
	p.decide(r)
	logger := log.FromContext(ctx)
	logger.Info("NetworkPolicy peers decided", "verdict", r.Verdict, "addressGroups", r.AddressGroups, "detail", r.Detail)
	if p.Settings.Node == "" {
		logger.Error(nil, "the address-group probe's answer is recorded nowhere: set NODE_NAME (spec.nodeName) in the controller's environment")
		return
	}
	var node corev1.Node
	if err := p.Client.Get(ctx, client.ObjectKey{Name: p.Settings.Node}, &node); err != nil {
		logger.Error(err, "recording the probe's answer on the node", "node", p.Settings.Node)
		return
	}
	kind := corev1.EventTypeNormal
	if r.Verdict != Enforced && !r.Off {
		kind = corev1.EventTypeWarning
	}
	if p.Recorder != nil {
		p.Recorder.Eventf(&node, nil, kind, "AddressGroups"+string(r.Verdict), "ProbeAddressGroups",
			"NetworkPolicy peers are %s: %s", peersAre(r.AddressGroups), r.Detail)
	}
	raw, _ := json.Marshal(r)
	if err := p.annotate(ctx, kuryrv1.AddressGroupProbeAnnotation, string(raw)); err != nil {
		logger.Error(err, "recording the probe's answer on the node", "node", p.Settings.Node)
	}
}

func (p *Prober) changesChan() chan struct{} {
	p.Changes()
	return p.changes
}

func peersAre(addressGroups bool) string {
	if addressGroups {
		return "address groups"
	}
	return "remote security groups"
}

func (p *Prober) pause(ctx context.Context, d time.Duration) {
	if p.Pause != nil {
		p.Pause(ctx, d)
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// annotate sets an annotation of the probe's node.
func (p *Prober) annotate(ctx context.Context, key, value string) error {
	node := &corev1.Node{}
	node.Name = p.Settings.Node
	return client.IgnoreNotFound(p.Client.Patch(ctx, node, annotationPatch(key, &value)))
}

// annotationPatch sets (value) or removes (nil) a Node annotation.
func annotationPatch(key string, value *string) client.Patch {
	raw, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]*string{key: value}}})
	return client.RawPatch(types.MergePatchType, raw)
}
