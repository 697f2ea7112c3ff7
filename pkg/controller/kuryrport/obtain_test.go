package kuryrport

import (
	"context"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"

	kuryrv1 "github.com/kuryr-k8s/kuryr/api/v1"
	"github.com/kuryr-k8s/kuryr/pkg/openstack"
)

// unanswered has Neutron commit port creates and answer status.
func unanswered(status int) func(method, coll string) (int, string) {
	return unansweredOn("POST", status)
}

// failOn has Neutron refuse the requests of method on coll with status.
func failOn(verb, collection string, status int) func(method, coll string) (int, string) {
	return func(method, coll string) (int, string) {
		if method == verb && coll == collection {
			return status, "refused by the test"
		}
		return 0, ""
	}
}

// unansweredOn has Neutron commit the port requests of method and answer
// status.
func unansweredOn(verb string, status int) func(method, coll string) (int, string) {
	return func(method, coll string) (int, string) {
		if method == verb && coll == "ports" {
			return status, "the server did not answer in time"
		}
		return 0, ""
	}
}

// A create that Neutron committed but never answered (a timeout, a 5xx
// after the commit) is found by its tags once the settle time is over (not
// looked for before: one look per pod), not created again.
func TestUnclearCreateIsLookedUpBeforeCreatingAgain(t *testing.T) {
	for _, status := range []int{500, 502, 504} {
		e := newEnv(t, kp("web", "uid-1"))
		e.fake.Unanswered = unanswered(status)
		if err := e.reconcile(t, "web"); err == nil {
			t.Fatal("want the error")
		}
		e.fake.Unanswered = nil
		lists := e.fake.Requests["GET ports"]
		if res, err := e.reconcileResult(t, "web"); err != nil || res.RequeueAfter <= 0 || e.fake.Requests["GET ports"] != lists {
			t.Fatalf("HTTP %d: within the settle time: %+v %v, %d lookups", status, res, err, e.fake.Requests["GET ports"]-lists)
		}
		e.r.Ledger.Unanswered.Now = func() time.Time { return time.Now().Add(openstack.UnclearSettle) }
		for i := 0; i < 3; i++ {
			if err := e.reconcile(t, "web"); err != nil {
				t.Fatal(err)
			}
		}
		v, ok := e.get(t, "web").Status.DefaultVIF()
		if !ok || e.fake.Count("ports") != 1 || e.fake.Requests["POST ports"] != 1 {
			t.Errorf("HTTP %d: vif %v, %d ports, %d creates; want the committed port adopted",
				status, v.PortID, e.fake.Count("ports"), e.fake.Requests["POST ports"])
		}
	}
}

// An unclear create that made nothing is retried, but only once Neutron
// has had the time to commit it: until then the reconcile waits.
func TestUnclearCreateRetriedAfterSettle(t *testing.T) {
	e := newEnv(t, kp("web", "uid-1"))
	e.fake.Fail = failOn("POST", "ports", 503)
	if err := e.reconcile(t, "web"); err == nil {
		t.Fatal("want the error")
	}
	e.fake.Fail = nil
	res, err := e.reconcileResult(t, "web")
	if err != nil || res.RequeueAfter <= 0 || e.fake.Count("ports") != 0 {
		t.Fatalf("created again at once: %+v %v, %d ports", res, err, e.fake.Count("ports"))
	}
	e.r.Ledger.Unanswered.Now = func() time.Time { return time.Now().Add(openstack.UnclearSettle) } // the settle time is over
	if err := e.reconcile(t, "web"); err != nil {
		t.Fatal(err)
	}
	if _, ok := e.get(t, "web").Status.DefaultVIF(); !ok || e.fake.Count("ports") != 1 {
		t.Errorf("not created after the settle time: %d ports", e.fake.Count("ports"))
	}
}

// A refusal (4xx) is clear: nothing was created, no lookup is needed.
func TestRefusedCreateIsNotUnclear(t *testing.T) {
	e := newEnv(t, kp("web", "uid-1"))
	e.fake.Fail = func(method, coll string) (int, string) {
		if method == "POST" && coll == "ports" {
			return 409, `{"NeutronError": {"type": "OverQuota", "message": "Quota exceeded"}}`
		}
		return 0, ""
	}
	_ = e.reconcile(t, "web")
	if pending, _ := e.r.Ledger.Unanswered.Pending("uid-1"); pending {
		t.Error("a 409 marked the create unclear")
	}
}

// A delete Neutron committed without answering is not sent again while
// Neutron may still be working on it: once the settle time is over the
// port is read, found gone, and the finalizer removed, with one DELETE.
func TestUnclearDeleteIsNotRepeated(t *testing.T) {
	e := newEnv(t, kp("web", "uid-1"))
	if err := e.reconcile(t, "web"); err != nil {
		t.Fatal(err)
	}
	if err := e.r.Delete(context.Background(), e.get(t, "web")); err != nil {
		t.Fatal(err)
	}
	e.fake.Unanswered = unansweredOn("DELETE", 504)
	if err := e.reconcile(t, "web"); err == nil {
		t.Fatal("want the unclear error")
	}
	e.fake.Unanswered = nil
	if res, err := e.reconcileResult(t, "web"); err != nil || res.RequeueAfter <= 0 || e.fake.Requests["DELETE ports"] != 1 {
		t.Fatalf("within the settle time: %+v %v, %d deletes", res, err, e.fake.Requests["DELETE ports"])
	}
	e.r.deletes.Now = func() time.Time { return time.Now().Add(openstack.UnclearSettle) }
	if err := e.reconcile(t, "web"); err != nil {
		t.Fatal(err)
	}
	var gone kuryrv1.KuryrPort
	err := e.r.Get(context.Background(), types.NamespacedName{Namespace: "ns", Name: "web"}, &gone)
	if err == nil || e.fake.Requests["DELETE ports"] != 1 {
		t.Errorf("KuryrPort there: %v (finalizers %v), %d deletes; want it gone after one", err == nil, gone.Finalizers, e.fake.Requests["DELETE ports"])
	}
}

// A hypervisor pod's port found after an unanswered create while Neutron
// is still creating it (not bound yet) is known as found (Ledger.Found),
// not written: the reconcile reads it again (by id) a second later, and a
// pod deleted meanwhile does not delete it (the sweep does, once Neutron
// is done with it).
func TestUnclearCreateFoundStillBeingCreated(t *testing.T) {
	e := newEnv(t, kp("web", "uid-1"))
	e.r.Settings.BindTimeout = time.Minute
	e.fake.Unanswered = unanswered(504)
	if err := e.reconcile(t, "web"); err == nil {
		t.Fatal("want the unclear error")
	}
	e.fake.Unanswered = nil
	id := e.fake.IDs("ports")[0]
	e.fake.Set("ports", id, "binding:vif_type", "unbound")
	e.r.Ledger.Unanswered.Now = func() time.Time { return time.Now().Add(openstack.UnclearSettle) }
	writes := e.fake.Writes()
	res, err := e.reconcileResult(t, "web")
	if err != nil || res.RequeueAfter <= 0 || res.RequeueAfter > time.Second || e.fake.Writes() != writes {
		t.Fatalf("%+v %v, %d writes: want a look again within a second, nothing written", res, err, e.fake.Writes()-writes)
	}
	if _, known := e.r.Ledger.Lookup("uid-1"); !known || !e.r.Ledger.Listed("uid-1") {
		t.Errorf("the port found is not known as found (known %v): its next look lists by tag again", known)
	}
	lists := e.fake.Requests["GET ports"]
	if res, err := e.reconcileResult(t, "web"); err != nil || res.RequeueAfter <= 0 || res.RequeueAfter > time.Second ||
		e.fake.Writes() != writes || e.fake.Requests["GET ports"] != lists+1 {
		t.Fatalf("%+v %v, %d writes, %d reads: want one read and a look again within a second", res, err,
			e.fake.Writes()-writes, e.fake.Requests["GET ports"]-lists)
	}
	deleteKP(t, e, "web")
	if e.fake.Get("ports", id) == nil || e.fake.Writes() != writes {
		t.Errorf("the pod's deletion wrote %d times, port left: %v", e.fake.Writes()-writes, e.fake.Get("ports", id) != nil)
	}
}
