// Package migrate is `kubectl kuryr migrate`: it moves a cluster that the
// original (Python) kuryr-kubernetes networks to kuryr without touching
// running pods' networking. The original's objects share kuryr's CRD names
// with other schemas, its Neutron and Octavia objects carry no tag kuryr
// knows, and its finalizers on Pods, Services and NetworkPolicies are ones
// kuryr never removes; so, in two steps around installing kuryr:
//
// prepare (kuryr's chart installed beforehand with its controller and
// daemons off and its CRDs not installed, in another namespace than the
// original's): the original's controller is scaled to 0; its objects are
// read, written to a backup file and recorded (ConfigMap kuryr-migration);
// what they name in OpenStack is tagged as kuryr tags what it makes (so
// the controller adopts it: ports by pod UID, networks by name, load
// balancers by Service UID, with their VIPs, the floating IPs it
// allocated); its objects, their finalizers and its CRDs are deleted, and
// its DaemonSet.
//
// finish (kuryr running): once kuryr's controller owns each pod, Service
// and NetworkPolicy (its object Ready, naming the same port or load
// balancer), the original's finalizer is removed from it; then the
// original's NetworkPolicy security groups, which the controller replaced
// on every port, are deleted, and its unused pooled ports.
package migrate

import (
	"context"
	"fmt"
	"time"

	"github.com/kuryr-k8s/kuryr/pkg/cli/doctor"
	"github.com/kuryr-k8s/kuryr/pkg/cli/env"
	"github.com/kuryr-k8s/kuryr/pkg/names"
)

// Options are migrate's flags.
type Options struct {
	// PythonNamespace is where the original runs (its Deployment
	// kuryr-controller, DaemonSet kuryr-cni-ds, ConfigMap kuryr-config).
	PythonNamespace string
	// Yes does it; otherwise what would be done is listed only.
	Yes bool
	// Backup is the file prepare writes the original's objects to.
	Backup string
	// Timeout bounds each wait.
	Timeout time.Duration
	// Interval is the wait between looks.
	Interval time.Duration
}

type run struct {
	e     *env.Env
	o     Options
	cloud *env.Cloud
	rec   *Record
	// released counts the objects finish released, over its looks.
	released int
}

// Prepare runs prepare's steps (with o.Yes) or says what they would do.
func Prepare(ctx context.Context, e *env.Env, o Options) ([]doctor.Finding, error) {
	if o.PythonNamespace == e.KuryrNamespace {
		return nil, fmt.Errorf("kuryr's namespace is the original's (%s): install kuryr's chart in another namespace "+
			"first, its ConfigMap and Secret would be the original's (docs/migrate.md)", o.PythonNamespace)
	}
	cloud, err := e.Cloud(ctx)
	if err != nil {
		return nil, fmt.Errorf("kuryr's configuration and OpenStack credentials (install kuryr's chart first, "+
			"docs/migrate.md): %w", err)
	}
	r := &run{e: e, o: o, cloud: cloud}
	if !o.Yes {
		return doctor.RunSteps(ctx, r.checkConfig, r.checkCRDs, r.snapshot)
	}
	return doctor.RunSteps(ctx, r.checkConfig, r.checkCRDs, r.stopPython, r.snapshot, r.adopt, r.deleteOriginal, r.deleteDaemon)
}

// checkConfig compares the original's kuryr.conf with kuryr's.
func (r *run) checkConfig(ctx context.Context) (doctor.Finding, bool) {
	const c = "configuration"
	if rec, err := loadRecord(ctx, r.e.Client, r.e.KuryrNamespace); err != nil {
		return doctor.Findingf(c, doctor.Fail, "%v", err), false
	} else if rec != nil && !rec.Finished {
		r.rec = rec // prepare ran before: its record goes on
		return doctor.Findingf(c, doctor.OK, "prepare ran before (ConfigMap %s/%s): it goes on", r.e.KuryrNamespace,
			names.MigrationConfigMap), true
	}
	p, err := pythonConfig(ctx, r.e.Client, r.o.PythonNamespace)
	if err != nil {
		return doctor.Findingf(c, doctor.Fail, "%v", err), false
	}
	fails, warnings := compare(p, r.cloud.Config)
	if len(fails) > 0 {
		return doctor.Findingf(c, doctor.Fail, "kuryr.conf must agree with the original's: %v", fails), false
	}
	r.rec = &Record{Cluster: r.cloud.Config.Kubernetes.ClusterName, PythonTags: p.Tags, PythonNamespace: r.o.PythonNamespace}
	if len(warnings) > 0 {
		return doctor.Findingf(c, doctor.Warn, "%v", warnings), true
	}
	return doctor.Findingf(c, doctor.OK, "kuryr.conf agrees with the original's (its resource_tags: %v)", p.Tags), true
}

// checkCRDs says whose the CRDs are.
func (r *run) checkCRDs(ctx context.Context) (doctor.Finding, bool) {
	const c = "CRDs"
	st, err := crdState(ctx, r.e.Client)
	switch {
	case err != nil:
		return doctor.Findingf(c, doctor.Fail, "%v", err), false
	case st == "original":
		return doctor.Findingf(c, doctor.OK, "the original's CRDs are installed"), true
	case r.rec.Adopted:
		return doctor.Findingf(c, doctor.OK, "the original's objects were adopted and deleted"), true
	}
	return doctor.Findingf(c, doctor.Fail, "the CRDs are not the original's (%q): install kuryr's chart with "+
		"crds.install=false before prepare, or there is nothing to migrate", st), false
}

// stopPython scales the original's controller to 0: from then on nothing
// changes its objects.
func (r *run) stopPython(ctx context.Context) (doctor.Finding, bool) {
	const c = "original controller"
	key := objectKey(r.o.PythonNamespace, names.PythonController)
	found, err := stopDeployment(ctx, r.e.Client, key, r.o.Timeout)
	switch {
	case err != nil:
		return doctor.Findingf(c, doctor.Fail, "%v", err), false
	case !found:
		return doctor.Findingf(c, doctor.OK, "no Deployment %s: stopped already", key), true
	}
	return doctor.Findingf(c, doctor.OK, "Deployment %s scaled to 0, its pods gone", key), true
}

// snapshot reads the original's objects; with Yes it writes the backup
// and the record first.
func (r *run) snapshot(ctx context.Context) (doctor.Finding, bool) {
	const c = "snapshot"
	if r.rec.Adopted {
		return doctor.Findingf(c, doctor.OK, "recorded before: %s", r.rec.summary()), true
	}
	orig, err := listOriginal(ctx, r.e.Client)
	if err != nil {
		return doctor.Findingf(c, doctor.Fail, "%v", err), false
	}
	got, problems := Translate(orig)
	r.rec.Ports, r.rec.Networks, r.rec.Services, r.rec.Policies = got.Ports, got.Networks, got.Services, got.Policies
	r.rec.Kept = got.Kept
	status := doctor.OK
	if len(problems) > 0 {
		status = doctor.Warn
	}
	if !r.o.Yes {
		return doctor.Findingf(c, status, "would adopt %s%s", r.rec.summary(), problemList(problems)), true
	}
	extra, missing := pythonObjects(ctx, r.e.Client, r.o.PythonNamespace)
	if len(missing) > 0 {
		return doctor.Findingf(c, doctor.Fail, "the original's objects for the backup: %v", missing), false
	}
	if err := writeBackup(r.o.Backup, orig, extra); err != nil {
		return doctor.Findingf(c, doctor.Fail, "%v", err), false
	}
	if err := saveRecord(ctx, r.e.Client, r.e.KuryrNamespace, r.rec); err != nil {
		return doctor.Findingf(c, doctor.Fail, "%v", err), false
	}
	return doctor.Findingf(c, status, "%s recorded in ConfigMap %s/%s, the original's objects written to %s%s",
		r.rec.summary(), r.e.KuryrNamespace, names.MigrationConfigMap, r.o.Backup, problemList(problems)), true
}

func problemList(problems []string) string {
	if len(problems) == 0 {
		return ""
	}
	return fmt.Sprintf("; not migrated: %v", problems)
}

func (r *Record) summary() string {
	return fmt.Sprintf("%d pods' ports, %d namespaces' networks, %d Services' load balancers, %d NetworkPolicies' groups",
		len(r.Ports), len(r.Networks), len(r.Services), len(r.Policies))
}
