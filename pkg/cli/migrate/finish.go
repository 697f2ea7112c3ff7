package migrate

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/kuryr-k8s/kuryr/pkg/cli/doctor"
	"github.com/kuryr-k8s/kuryr/pkg/cli/env"
	"github.com/kuryr-k8s/kuryr/pkg/controller/kuryrport"
	"github.com/kuryr-k8s/kuryr/pkg/names"
	"github.com/kuryr-k8s/kuryr/pkg/neutron"
)

// Finish runs finish's steps (with o.Yes) or says where the migration
// stands.
func Finish(ctx context.Context, e *env.Env, o Options) ([]doctor.Finding, error) {
	rec, err := loadRecord(ctx, e.Client, e.KuryrNamespace)
	switch {
	case err != nil:
		return nil, err
	case rec == nil:
		return nil, fmt.Errorf("no ConfigMap %s/%s: run kubectl kuryr migrate prepare first", e.KuryrNamespace, names.MigrationConfigMap)
	case !rec.Adopted:
		return nil, errors.New("prepare did not finish (nothing adopted yet): run kubectl kuryr migrate prepare --yes again")
	}
	cloud, err := e.Cloud(ctx)
	if err != nil {
		return nil, fmt.Errorf("kuryr's configuration and OpenStack credentials: %w", err)
	}
	r := &run{e: e, o: o, cloud: cloud, rec: rec}
	if !o.Yes {
		f, _ := r.ownership(ctx, false)
		return []doctor.Finding{f}, nil
	}
	return doctor.RunSteps(ctx, r.controllerUp, r.release, r.unmark, r.deletePooled, r.deleteGroups, r.done)
}

// controllerUp waits for kuryr's controller to run.
func (r *run) controllerUp(ctx context.Context) (doctor.Finding, bool) {
	const c = "controller"
	key := objectKey(r.e.KuryrNamespace, names.Controller)
	err := wait.PollUntilContextTimeout(ctx, r.o.Interval, r.o.Timeout, true, func(ctx context.Context) (bool, error) {
		var d appsv1.Deployment
		err := r.e.Client.Get(ctx, key, &d)
		return err == nil && d.Status.ReadyReplicas > 0, nil
	})
	if err != nil {
		return doctor.Findingf(c, doctor.Fail, "Deployment %s has no ready pod after %s: install kuryr (docs/migrate.md)", key, r.o.Timeout), false
	}
	return doctor.Findingf(c, doctor.OK, "kuryr-controller is running"), true
}

// release removes the original's finalizers as kuryr takes each object
// over, until every one is released or the time is up.
func (r *run) release(ctx context.Context) (doctor.Finding, bool) {
	start := time.Now()
	var f doctor.Finding
	err := wait.PollUntilContextTimeout(ctx, r.o.Interval, r.o.Timeout, true, func(ctx context.Context) (bool, error) {
		var left bool
		f, left = r.ownership(ctx, true)
		return !left, nil
	})
	if err != nil {
		f.Status = doctor.Fail
		f.Message = fmt.Sprintf("after %s: %s", r.o.Timeout, f.Message)
		return f, false
	}
	f.Message = fmt.Sprintf("in %s: %s", time.Since(start).Round(time.Second), f.Message)
	return f, true
}

// unmark takes the adopted mark off the ports prepare adopted: kuryr owns
// them now, and a port of kuryr's fails closed while its pod's groups are
// not ready.
func (r *run) unmark(ctx context.Context) (doctor.Finding, bool) {
	const c = "adopted ports"
	for _, p := range r.rec.Ports {
		if err := r.cloud.Neutron.RemoveTag(ctx, neutron.KindPort, p.PortID, names.AdoptedTag); err != nil {
			return doctor.Findingf(c, doctor.Fail, "%v", err), false
		}
	}
	return doctor.Findingf(c, doctor.OK, "%d ports are kuryr's own now (tag %s removed)", len(r.rec.Ports), names.AdoptedTag), true
}

// deleteGroups deletes the original's NetworkPolicy groups, which no port
// of a migrated pod carries any more (kuryr gave each its own); one still
// on a port (Neutron refuses: 409) is tried again until the time is up,
// then left, named, for the user (a port of a pod not migrated, or
// kuryr's policies off).
func (r *run) deleteGroups(ctx context.Context) (doctor.Finding, bool) {
	const c = "policy groups"
	left := slices.Clone(r.rec.Policies)
	var last error
	err := wait.PollUntilContextTimeout(ctx, r.o.Interval, r.o.Timeout, true, func(ctx context.Context) (bool, error) {
		left = slices.DeleteFunc(left, func(p PolicyRecord) bool {
			err := r.cloud.Neutron.DeleteSecurityGroup(ctx, p.SecurityGroupID)
			if err != nil {
				last = fmt.Errorf("group %s of NetworkPolicy %s: %w", p.SecurityGroupID, p.Ref, err)
			}
			return err == nil
		})
		return len(left) == 0, nil
	})
	if err != nil {
		var ids []string
		for _, p := range left {
			ids = append(ids, p.SecurityGroupID)
		}
		return doctor.Findingf(c, doctor.Warn, "%d of the original's %d groups left after %s (%v), still on ports "+
			"(openstack port list --security-group ID): delete them once those ports are gone; last error: %v",
			len(left), len(r.rec.Policies), r.o.Timeout, ids, last), true
	}
	return doctor.Findingf(c, doctor.OK, "the original's %d NetworkPolicy groups deleted", len(r.rec.Policies)), true
}

// deletePooled deletes the original's pooled ports: its pod ports (device
// owner compute:kuryr, or trunk subports) carrying its resource_tags that
// kuryr did not adopt, are not a running pod's (device_id: the pod's UID;
// a pooled port may carry the UID of the pod whose request made it, and
// is then kept while that pod lives), and are not one prepare kept (a
// pod's other interfaces, pods not migrated). Without resource_tags they
// cannot be told from other projects' ports: mentioned only.
func (r *run) deletePooled(ctx context.Context) (doctor.Finding, bool) {
	const c = "pooled ports"
	if len(r.rec.PythonTags) == 0 {
		return doctor.Findingf(c, doctor.Warn, "the original had no resource_tags: its unused pooled ports, if it had "+
			"pools, cannot be told apart; look for DOWN ports with device_owner compute:kuryr"), true
	}
	ps, err := r.cloud.Neutron.ListPorts(ctx, r.rec.PythonTags, "")
	if err != nil {
		return doctor.Findingf(c, doctor.Fail, "%v", err), false
	}
	var pods corev1.PodList
	if err := r.e.Client.List(ctx, &pods); err != nil {
		return doctor.Findingf(c, doctor.Fail, "list pods: %v", err), false
	}
	live := map[string]bool{}
	for _, p := range pods.Items {
		live[string(p.UID)] = true
	}
	n := 0
	for _, p := range ps {
		if !pooled(p, r.rec.Cluster) || slices.Contains(r.rec.Kept, p.ID) || live[p.DeviceID] {
			continue
		}
		if err := r.cloud.Neutron.DeletePort(ctx, p.ID); err != nil {
			return doctor.Findingf(c, doctor.Fail, "delete port %s: %v", p.ID, err), false
		}
		n++
	}
	return doctor.Findingf(c, doctor.OK, "%d of the original's unused pooled ports deleted (ports of running pods "+
		"it did not migrate are kept)", n), true
}

// pooled says whether a port carrying the original's tags is one of its
// pooled ports: a pod port kuryr did not adopt. Pure.
func pooled(p neutron.Port, cluster string) bool {
	if slices.Contains(p.Tags, names.ClusterTag(cluster)) {
		return false
	}
	return p.DeviceOwner == kuryrport.DeviceOwner || p.DeviceOwner == "trunk:subport"
}

func (r *run) done(ctx context.Context) (doctor.Finding, bool) {
	r.rec.Finished = true
	if err := saveRecord(ctx, r.e.Client, r.e.KuryrNamespace, r.rec); err != nil {
		return doctor.Findingf("record", doctor.Fail, "%v", err), false
	}
	return doctor.Findingf("record", doctor.OK, "migration finished (ConfigMap %s/%s keeps what was adopted; delete it when "+
		"you no longer need it)", r.e.KuryrNamespace, names.MigrationConfigMap), true
}
