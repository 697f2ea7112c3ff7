package migrate

import (
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kuryr-k8s/kuryr/pkg/cli/doctor"
	"github.com/kuryr-k8s/kuryr/pkg/names"
)

func objectKey(ns, name string) client.ObjectKey { return client.ObjectKey{Namespace: ns, Name: name} }

// newAdopter tags for kuryr's configuration.
func (r *run) newAdopter() *adopter {
	a := &adopter{neutron: r.cloud.Neutron, cluster: r.rec.Cluster, extra: r.cloud.Config.NeutronDefaults.ResourceTags,
		settle: r.o.Timeout, interval: r.o.Interval}
	if r.cloud.Octavia != nil {
		a.octavia = r.cloud.Octavia
	}
	return a
}

// adopt tags every object the record names; those gone are dropped from
// the record (nothing is left of them to adopt).
func (r *run) adopt(ctx context.Context) (doctor.Finding, bool) {
	const c = "adopt"
	if r.rec.Adopted {
		return doctor.Findingf(c, doctor.OK, "adopted before"), true
	}
	a := r.newAdopter()
	start := time.Now()
	var gone []string
	var err error
	if r.rec.Ports, err = adoptAll(ctx, r.rec.Ports, &gone, a.port, func(p PortRecord) string {
		return "port " + p.PortID + " of pod " + p.Ref.String()
	}); err != nil {
		return doctor.Findingf(c, doctor.Fail, "%v", err), false
	}
	if r.rec.Networks, err = adoptAll(ctx, r.rec.Networks, &gone, a.network, func(n NetworkRecord) string {
		return "network " + n.NetworkID + " of namespace " + n.Namespace
	}); err != nil {
		return doctor.Findingf(c, doctor.Fail, "%v", err), false
	}
	if r.rec.Services, err = adoptAll(ctx, r.rec.Services, &gone, a.service, func(s ServiceRecord) string {
		return "load balancer " + s.LoadBalancerID + " of Service " + s.Ref.String()
	}); err != nil {
		return doctor.Findingf(c, doctor.Fail, "%v", err), false
	}
	r.rec.Adopted = true
	if err := saveRecord(ctx, r.e.Client, r.e.KuryrNamespace, r.rec); err != nil {
		return doctor.Findingf(c, doctor.Fail, "%v", err), false
	}
	msg := fmt.Sprintf("tagged for cluster %s in %s: %s", r.rec.Cluster, time.Since(start).Round(time.Second), r.rec.summary())
	if len(gone) > 0 {
		return doctor.Findingf(c, doctor.Warn, "%s; gone from OpenStack already: %v", msg, gone), true
	}
	return doctor.Findingf(c, doctor.OK, "%s", msg), true
}

// adoptAll adopts each item, keeping those adopted and naming in gone
// those OpenStack no longer has; the first error stops it.
func adoptAll[T any](ctx context.Context, items []T, gone *[]string, adopt func(context.Context, T) (bool, error),
	name func(T) string) ([]T, error) {
	kept := make([]T, 0, len(items))
	for _, it := range items {
		ok, err := adopt(ctx, it)
		switch {
		case err != nil:
			return items, fmt.Errorf("%s: %w", name(it), err)
		case ok:
			kept = append(kept, it)
		default:
			*gone = append(*gone, name(it))
		}
	}
	return kept, nil
}

// deleteOriginal deletes the original's objects and CRDs.
func (r *run) deleteOriginal(ctx context.Context) (doctor.Finding, bool) {
	const c = "original objects"
	st, err := crdState(ctx, r.e.Client)
	switch {
	case err != nil:
		return doctor.Findingf(c, doctor.Fail, "%v", err), false
	case st != "original":
		return doctor.Findingf(c, doctor.OK, "the original's CRDs are gone"), true
	}
	orig, err := listOriginal(ctx, r.e.Client)
	if err != nil {
		return doctor.Findingf(c, doctor.Fail, "%v", err), false
	}
	n, err := deleteOriginal(ctx, r.e.Client, orig, r.o.Timeout)
	if err != nil {
		return doctor.Findingf(c, doctor.Fail, "%v", err), false
	}
	return doctor.Findingf(c, doctor.OK, "%d objects and the 4 CRDs deleted: install kuryr's CRDs now (docs/migrate.md)", n), true
}

// deleteDaemon deletes the original's DaemonSet: its CNI configuration
// must give way to kuryr-daemon's. Running pods keep their interfaces.
func (r *run) deleteDaemon(ctx context.Context) (doctor.Finding, bool) {
	const c = "original daemon"
	ds := &appsv1.DaemonSet{}
	ds.Namespace, ds.Name = r.o.PythonNamespace, names.PythonDaemonSet
	if err := r.e.Client.Delete(ctx, ds); err != nil && !apierrors.IsNotFound(err) {
		return doctor.Findingf(c, doctor.Fail, "delete DaemonSet %s/%s: %v", ds.Namespace, ds.Name, err), false
	}
	return doctor.Findingf(c, doctor.OK, "DaemonSet %s/%s deleted (running pods keep their interfaces); "+
		"next: helm upgrade kuryr with crds.install=true and the controller and daemons on, then kubectl kuryr migrate finish",
		ds.Namespace, ds.Name), true
}
