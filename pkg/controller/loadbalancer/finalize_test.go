package loadbalancer

import (
	"context"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kuryrv1 "github.com/kuryr-k8s/kuryr/api/v1"
	"github.com/kuryr-k8s/kuryr/pkg/controller/kit/kittest"
	"github.com/kuryr-k8s/kuryr/pkg/octavia"
	"github.com/kuryr-k8s/kuryr/pkg/octavia/octaviatest"
)

// slowDelete shows the deleted load balancer PENDING_DELETE for a number
// of lists, as Octavia does while the provider deletes it.
type slowDelete struct {
	loadBalancers
	pending int
	id      string
}

func (s *slowDelete) DeleteLoadBalancer(ctx context.Context, id string) error {
	s.id = id
	return s.loadBalancers.DeleteLoadBalancer(ctx, id)
}

func (s *slowDelete) FindLoadBalancers(ctx context.Context, tags []string) ([]octavia.LoadBalancer, error) {
	if s.id != "" && s.pending > 0 {
		s.pending--
		return []octavia.LoadBalancer{{ID: s.id, ProvisioningStatus: "PENDING_DELETE"}}, nil
	}
	return s.loadBalancers.FindLoadBalancers(ctx, tags)
}

// TestFinalizeWaitsForDelete: the finalizer stays until Octavia no longer
// lists the load balancer, and the delete is not sent again meanwhile.
func TestFinalizeWaitsForDelete(t *testing.T) {
	e := newEnv(t, "ClusterIP")
	e.converge(t)
	slow := &slowDelete{loadBalancers: e.r.Octavia, pending: 3}
	e.r.Octavia = slow
	if err := e.cl.Delete(context.Background(), e.klb(t)); err != nil {
		t.Fatal(err)
	}
	req := ctrl.Request{NamespacedName: types.NamespacedName{Namespace: "demo", Name: "web"}}
	for i := 0; i < 3; i++ {
		res, err := e.r.Reconcile(context.Background(), req)
		if err != nil || res.RequeueAfter == 0 {
			t.Fatalf("reconcile %d while PENDING_DELETE: %v, %v; want a requeue", i, res, err)
		}
		if e.klb(t).DeletionTimestamp == nil {
			t.Fatal("not being deleted")
		}
	}
	if n := e.oct.Requests["DELETE loadbalancers"]; n != 1 {
		t.Fatalf("%d load balancer deletes, want 1", n)
	}
	e.convergedAway(t)
}

// convergedAway converges and checks that the KuryrLoadBalancer is gone.
func (e *env) convergedAway(t *testing.T) {
	t.Helper()
	e.converge(t)
	var gone kuryrv1.KuryrLoadBalancer
	if err := e.cl.Get(context.Background(), client.ObjectKey{Namespace: "demo", Name: "web"}, &gone); err == nil {
		t.Fatalf("KuryrLoadBalancer still there: %v", gone.Finalizers)
	}
}

// TestFinalizeGivesUpOnStuckDelete: a load balancer still PENDING_DELETE
// deleteWait after kuryr's first delete is given up, with a Warning.
func TestFinalizeGivesUpOnStuckDelete(t *testing.T) {
	e := newEnv(t, "ClusterIP")
	ev := &kittest.Events{}
	e.r.Recorder = ev
	klb := e.klb(t)
	stuck := []octavia.LoadBalancer{{ID: "x", ProvisioningStatus: "PENDING_DELETE"}}
	if _, wait, err := e.r.deleteLBs(context.Background(), klb, "u", stuck); !wait || err != nil {
		t.Fatalf("wait %v, err %v; want a wait", wait, err)
	}
	e.r.progress.get("u").deletedSince = time.Now().Add(-deleteWait - time.Second)
	if _, wait, err := e.r.deleteLBs(context.Background(), klb, "u", stuck); wait || err != nil {
		t.Fatalf("wait %v, err %v; want no more wait", wait, err)
	}
	if w := ev.Notes("DeleteNotFinished"); len(w) != 1 || !strings.Contains(w[0], "an operator must set") {
		t.Fatalf("Warnings %v, want one", w)
	}
}

// TestFinalizeDeletesAgainAfterError: a load balancer the provider failed
// to delete (ERROR) is deleted again, at the slower pace.
func TestFinalizeDeletesAgainAfterError(t *testing.T) {
	e := newEnv(t, "ClusterIP")
	e.converge(t)
	lbs := e.oct.List(octaviatest.LoadBalancers)
	if len(lbs) != 1 {
		t.Fatalf("%d load balancers", len(lbs))
	}
	failed := []octavia.LoadBalancer{{ID: lbs[0]["id"].(string), ProvisioningStatus: "ERROR"}}
	res, wait, err := e.r.deleteLBs(context.Background(), e.klb(t), "u", failed)
	if !wait || err != nil || res.RequeueAfter != errorRedelete {
		t.Fatalf("wait %v, err %v, requeue %v; want a wait of %v", wait, err, res.RequeueAfter, errorRedelete)
	}
	if n := e.oct.Requests["DELETE loadbalancers"]; n != 1 {
		t.Fatalf("%d deletes, want 1", n)
	}
}

// TestFinalizeWaitsForUnansweredCreate: a create that went unanswered may
// commit after the load balancer kuryr found was deleted; the finalizer
// stays until its settle time is over, so that what it made is deleted too.
func TestFinalizeWaitsForUnansweredCreate(t *testing.T) {
	e := newEnv(t, "ClusterIP")
	e.converge(t)
	now := time.Now()
	e.r.creates().Now = func() time.Time { return now }
	e.r.creates().Mark(svcUID)
	if err := e.cl.Delete(context.Background(), e.klb(t)); err != nil {
		t.Fatal(err)
	}
	req := ctrl.Request{NamespacedName: types.NamespacedName{Namespace: "demo", Name: "web"}}
	for i := 0; i < 5; i++ {
		if _, err := e.r.Reconcile(context.Background(), req); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(e.oct.List(octaviatest.LoadBalancers)); n != 0 {
		t.Fatalf("%d load balancers left, want the found one deleted", n)
	}
	if e.klb(t).DeletionTimestamp == nil {
		t.Fatal("KuryrLoadBalancer gone before the unanswered create settled")
	}
	now = now.Add(2 * time.Minute)
	e.convergedAway(t)
}

// TestFinalizeWaitRestartsAfterNoneListed: once nothing is listed, the
// 5-min clock restarts, so a load balancer a late create commits is waited
// for in full.
func TestFinalizeWaitRestartsAfterNoneListed(t *testing.T) {
	e := newEnv(t, "ClusterIP")
	klb := e.klb(t)
	e.r.progress.get("u").deletedSince = time.Now().Add(-deleteWait - time.Second)
	if _, wait, err := e.r.deleteLBs(context.Background(), klb, "u", nil); wait || err != nil {
		t.Fatalf("wait %v, err %v with nothing listed", wait, err)
	}
	late := []octavia.LoadBalancer{{ID: "late", ProvisioningStatus: "PENDING_DELETE"}}
	if _, wait, err := e.r.deleteLBs(context.Background(), klb, "u", late); !wait || err != nil {
		t.Fatalf("wait %v, err %v; want the late load balancer waited for", wait, err)
	}
}

// TestDeleteWaitsForTheLastWrite: a Service deleted while the provider
// still works through kuryr's last write (a batch, member by member) gets
// its cascade delete only once Octavia shows the write: ovn-octavia-provider
// 8.0 fails a delete that runs beside the member requests.
func TestDeleteWaitsForTheLastWrite(t *testing.T) {
	e := newEnv(t, "ClusterIP")
	e.converge(t)
	e.oct.MemberByMember = true
	klb := e.klb(t)
	klb.Spec.Ports[0].Members = members("10.10.0.9")
	if err := e.cl.Update(context.Background(), klb); err != nil {
		t.Fatal(err)
	}
	req := ctrl.Request{NamespacedName: types.NamespacedName{Namespace: "demo", Name: "web"}}
	for e.oct.Requests["PUT members"] == 0 {
		if _, err := e.r.Reconcile(context.Background(), req); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.cl.Delete(context.Background(), e.klb(t)); err != nil {
		t.Fatal(err)
	}
	e.convergedAway(t)
	if e.oct.BusyDeletes != 0 {
		t.Fatalf("%d cascade deletes while the provider worked through the batch, want 0", e.oct.BusyDeletes)
	}
}

// TestLoadBalancerBackAfterGoneIsDeletedAgain: the provider may report a
// load balancer ERROR after it reported it DELETED; one Octavia lists again
// within GoneSettle is deleted again before the finalizer goes.
func TestLoadBalancerBackAfterGoneIsDeletedAgain(t *testing.T) {
	e := newEnv(t, "ClusterIP")
	e.converge(t)
	now := time.Now()
	e.r.progress.now = func() time.Time { return now }
	e.r.Settings.GoneSettle = 10 * time.Second
	lb := e.klb(t).Status.LoadBalancer.ID
	tags := e.r.tags(svcUID)
	if err := e.cl.Delete(context.Background(), e.klb(t)); err != nil {
		t.Fatal(err)
	}
	req := ctrl.Request{NamespacedName: types.NamespacedName{Namespace: "demo", Name: "web"}}
	for i := 0; i < 3; i++ { // deleted, then none listed: waits
		if res, err := e.r.Reconcile(context.Background(), req); err != nil || res.RequeueAfter == 0 {
			t.Fatalf("reconcile %d: %v, %v; want a requeue", i, res, err)
		}
	}
	back := e.oct.Add(octaviatest.LoadBalancers, octaviatest.Object{"name": "demo/web", "tags": toAny(tags),
		"provisioning_status": "ERROR", "vip_subnet_id": "svc-subnet"})
	now = now.Add(5 * time.Second)
	if res, err := e.r.Reconcile(context.Background(), req); err != nil || res.RequeueAfter == 0 {
		t.Fatalf("with the load balancer back: %v, %v; want a requeue", res, err)
	}
	if e.oct.Get(octaviatest.LoadBalancers, back) != nil {
		t.Fatalf("load balancer %s (back after %s was deleted) not deleted again", back, lb)
	}
	now = now.Add(5 * time.Second)
	if res, err := e.r.Reconcile(context.Background(), req); err != nil || res.RequeueAfter == 0 {
		t.Fatalf("gone again for 5 s: %v, %v; want a requeue", res, err)
	}
	now = now.Add(10 * time.Second)
	e.convergedAway(t)
}

func toAny(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}
