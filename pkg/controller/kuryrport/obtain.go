package kuryrport

import (
	"context"
	"fmt"
	"time"

	kuryrv1 "github.com/kuryr-k8s/kuryr/api/v1"
	"github.com/kuryr-k8s/kuryr/pkg/controller/nested"
	"github.com/kuryr-k8s/kuryr/pkg/names"
	"github.com/kuryr-k8s/kuryr/pkg/neutron"
	"github.com/kuryr-k8s/kuryr/pkg/openstack"
)

// settling asks for a retry after a while, without an error: a create went
// unanswered and what it may have made is still being looked for, or a
// port found is one Neutron may still be creating.
type settling struct {
	wait time.Duration
	why  string
}

func (s settling) Error() string { return fmt.Sprintf("%s (%s more)", s.why, s.wait) }

// obtainPort returns the pod's port: the one the ledger knows (re-read if
// it was not bound when listed), one an unanswered create made, one from
// the pool, or a new one.
func (r *Reconciler) obtainPort(ctx context.Context, kp *kuryrv1.KuryrPort, target Target, groups []string, mode string) (neutron.Port, string, error) {
	uid := kp.Spec.PodUID
	if p, found := r.Ledger.Lookup(uid); found {
		if !r.Ledger.Doomed(p.ID) {
			return r.known(ctx, kp, target, groups, p, mode)
		}
		if err := r.discard(ctx, kp, p.ID); err != nil {
			return neutron.Port{}, "", fmt.Errorf("a port given up: %w", err)
		}
	}
	if pending, left := r.Ledger.Unanswered.Pending(uid); pending {
		// One look, once the settle time is over: every reconcile of a
		// burst's pods looking at once is what an overloaded Neutron
		// does not need.
		if left > 0 {
			return neutron.Port{}, "", settling{left, "looking for the port of an unanswered create before creating another"}
		}
		p, found, err := r.findByTag(ctx, uid)
		if err != nil {
			return neutron.Port{}, "", err
		}
		if found {
			r.Ledger.Found(uid, p)
			return r.known(ctx, kp, target, groups, p, mode)
		}
		r.Ledger.Unanswered.GiveUp(uid)
	}
	// A hypervisor's pooled ports are bound to it, a nested-vlan VM's are
	// its trunk's subports; nested-macvlan's are not pooled.
	if vlan := mode == nested.ModeVLAN; r.Pool != nil && nested.Poolable(mode) {
		if p, ok := r.Pool.Take(kp.Spec.PodNodeName, uid, target, vlan); ok {
			r.Ledger.Record(uid, p)
			return r.bound(ctx, kp, target, groups, p, kuryrv1.ReasonPooled, mode)
		}
	}
	settings := r.Settings
	settings.Nested = nested.Where{Mode: mode}.OnVM()
	if len(groups) > 0 {
		settings.SecurityGroups = union(settings.SecurityGroups, groups)
	}
	created, err := r.Neutron.CreatePort(ctx, portSpec(kp, target, settings))
	if created != nil {
		// Even a port created with an error after it (tagging) is recorded,
		// so the retry adopts it rather than making another.
		r.Ledger.Record(uid, *created)
	} else if openstack.Unclear(err) {
		r.Ledger.Unanswered.Mark(uid)
	}
	if err != nil {
		return neutron.Port{}, "", err
	}
	return *created, kuryrv1.ReasonCreated, nil
}

// bound returns p once Neutron has bound it, re-reading a copy listed
// while Neutron was still creating it (binding comes last): a port the
// ledger found, or one the pool handed out (the sweep can list a refill's
// ports before the refill returns). A bound port is not replaced as "never
// bound" for a stale copy; one deleted meanwhile is forgotten and another
// obtained.
func (r *Reconciler) bound(ctx context.Context, kp *kuryrv1.KuryrPort, target Target, groups []string, p neutron.Port, reason string, mode string) (neutron.Port, string, error) {
	if p.VIFType != neutron.VIFTypeUnbound && p.VIFType != "" {
		return p, reason, nil // bound, or failed: checkBinding decides
	}
	fresh, err := r.Neutron.GetPort(ctx, p.ID)
	if neutron.IsNotFound(err) {
		r.Ledger.Forget(kp.Spec.PodUID)
		if r.Pool != nil {
			r.Pool.Forget(p.ID) // in case it was a pooled port
		}
		return r.obtainPort(ctx, kp, target, groups, mode)
	}
	if err != nil {
		return p, "", fmt.Errorf("re-read port %s: %w", p.ID, err)
	}
	r.Ledger.Refresh(kp.Spec.PodUID, *fresh)
	return *fresh, reason, nil
}

// findByTag looks up the pod's port by its tags, preferring a bound one;
// any other is a duplicate the sweep removes once the status names one.
func (r *Reconciler) findByTag(ctx context.Context, uid string) (neutron.Port, bool, error) {
	ps, err := r.Neutron.ListPorts(ctx, []string{names.ClusterTag(r.Settings.Cluster), names.PodTag(uid)}, "")
	if err != nil || len(ps) == 0 {
		return neutron.Port{}, false, err
	}
	for _, p := range ps {
		if neutron.Bound(&p) {
			return p, true, nil
		}
	}
	return ps[0], true, nil
}

// known returns the pod's port the ledger knows. One it knows only from a
// listing (at a restart, or after an unanswered create: Ledger.Found) may
// be one Neutron is still creating (see neutron.CreateFinished): a VM's
// (unbound by design: nothing tells when Neutron is done with it) settles
// until it is older than BindTimeout; a hypervisor's is re-read by id in
// bound and waited for by checkBinding until Neutron has bound it. Nothing
// writes or deletes it meanwhile (finalize and failClosed skip it).
func (r *Reconciler) known(ctx context.Context, kp *kuryrv1.KuryrPort, target Target, groups []string, p neutron.Port, mode string) (neutron.Port, string, error) {
	if r.Ledger.Listed(kp.Spec.PodUID) && (nested.Where{Mode: mode}).OnVM() &&
		!neutron.CreateFinished(&p, r.Settings.BindTimeout, time.Now()) {
		return neutron.Port{}, "", settling{r.Settings.BindTimeout - time.Since(p.CreatedAt),
			fmt.Sprintf("waiting for Neutron to finish creating port %s", p.ID)}
	}
	return r.bound(ctx, kp, target, groups, p, kuryrv1.ReasonAdopted, mode)
}
