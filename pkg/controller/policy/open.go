package policy

import (
	"context"
	"fmt"
	"net/netip"
	"sync"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/kuryr-k8s/kuryr/pkg/names"
	"github.com/kuryr-k8s/kuryr/pkg/neutron"
)

// openAPI is the Neutron seam of the open groups.
type openAPI interface {
	neutron.GroupFinder
	neutron.RuleWriter
}

// OpenGroups ensures the open groups once per process (found by tags, or
// created) with the rules the configuration gives them, and serves their
// ids. The open groups of the cluster (names.OpenIngress, names.OpenEgress):
// a pod that no policy isolates in a direction carries the open group of
// that direction ("a pod selected by no policy in a direction is
// unrestricted in that direction").
type OpenGroups struct {
	Neutron   openAPI
	Cluster   string
	ProjectID string
	// Unrestricted: the sources an unrestricted pod admits (CIDRs); when
	// empty, Derive gives them (the cluster's networks), read again every
	// Refresh by Start.
	Unrestricted []string
	Derive       func(ctx context.Context) ([]string, error)
	Refresh      time.Duration

	// ensuring serialises the ensures (at most one group is ever created per
	// name); mu guards the ids, so that IDs never waits for a resync.
	ensuring sync.Mutex
	mu       sync.Mutex
	in, out  string
	resolved bool
}

// IDs returns the ids of the open-ingress and open-egress groups.
func (o *OpenGroups) IDs(ctx context.Context) (in, out string, err error) {
	if in, out, ok := o.known(); ok {
		return in, out, nil
	}
	o.ensuring.Lock()
	defer o.ensuring.Unlock()
	if in, out, ok := o.known(); ok { // resolved while this one waited
		return in, out, nil
	}
	if in, out, err = o.resolve(ctx); err != nil {
		return "", "", err
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	o.in, o.out, o.resolved = in, out, true
	return in, out, nil
}

// known returns the ids once resolved.
func (o *OpenGroups) known() (in, out string, ok bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.in, o.out, o.resolved
}

// resolve ensures both groups with their rules; o.ensuring is held.
func (o *OpenGroups) resolve(ctx context.Context) (in, out string, err error) {
	sources, err := o.sources(ctx)
	if err != nil {
		return "", "", err
	}
	if in, err = o.ensure(ctx, names.OpenIngress, OpenRules(Ingress, sources)); err != nil {
		return "", "", err
	}
	if out, err = o.ensure(ctx, names.OpenEgress, OpenRules(Egress, []string{"0.0.0.0/0", "::/0"})); err != nil {
		return "", "", err
	}
	return in, out, nil
}

func (o *OpenGroups) sources(ctx context.Context) ([]string, error) {
	if len(o.Unrestricted) > 0 || o.Derive == nil {
		return o.Unrestricted, nil
	}
	s, err := o.Derive(ctx)
	if err != nil {
		return nil, fmt.Errorf("the sources pods no policy isolates admit: %w", err)
	}
	return s, nil
}

// Start keeps the open groups in step, on the leader, every Refresh (it is
// a manager.Runnable): derived sources follow the cluster's networks (a
// tenant network attached to the router later is admitted within
// Refresh), and a group deleted behind kuryr's back (Neutron lets one go
// only while no port carries it) is made again and its new id served,
// instead of an id every port create would be refused for.
func (o *OpenGroups) Start(ctx context.Context) error {
	if o.Refresh <= 0 {
		return nil
	}
	t := time.NewTicker(o.Refresh)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		if err := o.resync(ctx); err != nil && ctx.Err() == nil {
			log.FromContext(ctx).Error(err, "keeping the open groups in step")
		}
	}
}

// resync ensures the groups again, once they are known, and serves the
// ids it finds (the ones known until then when it fails); IDs serves the
// known ones meanwhile.
func (o *OpenGroups) resync(ctx context.Context) error {
	prevIn, prevOut, ok := o.known()
	if !ok {
		return nil
	}
	o.ensuring.Lock()
	defer o.ensuring.Unlock()
	in, out, err := o.resolve(ctx)
	if err != nil {
		return err
	}
	if in != prevIn || out != prevOut {
		log.FromContext(ctx).Info("open groups made again", "openIngress", in, "openEgress", out,
			"previousIngress", prevIn, "previousEgress", prevOut)
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	o.in, o.out = in, out
	return nil
}

// OpenRules admit every protocol from (ingress) or to (egress) each CIDR;
// a whole family is written as Neutron writes its default rules (no
// remote). Pure.
func OpenRules(direction string, cidrs []string) []neutron.Rule {
	var out []neutron.Rule
	for _, c := range cidrs {
		p, err := netip.ParsePrefix(c)
		if err != nil {
			continue // the configuration was validated
		}
		r := neutron.Rule{Direction: direction, EtherType: "IPv4"}
		if p.Addr().Is6() {
			r.EtherType = "IPv6"
		}
		if p.Bits() != 0 {
			r.RemotePrefix = p.Masked().String()
		}
		out = append(out, r)
	}
	return out
}

func (o *OpenGroups) ensure(ctx context.Context, name string, want []neutron.Rule) (string, error) {
	tags := []string{names.ClusterTag(o.Cluster), names.PolicyTag(name)}
	// Found by tags only (no recorded id, no lookup by name).
	sg, err := neutron.EnsureGroup(ctx, o.Neutron, neutron.GroupSpec{Tags: tags, Name: name,
		Description: "kuryr: pods no NetworkPolicy isolates", Project: o.ProjectID})
	if err != nil {
		return "", err
	}
	// Rules of both directions, deleted one after the other.
	if _, _, err := neutron.SyncRules(ctx, o.Neutron, sg, want,
		neutron.RuleSync{Project: o.ProjectID, Directions: []string{Ingress, Egress}}); err != nil {
		return "", fmt.Errorf("open group %s: %w", name, err)
	}
	return sg.ID, nil
}
