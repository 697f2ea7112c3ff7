package node

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	kuryrv1 "github.com/kuryr-k8s/kuryr/api/v1"
	"github.com/kuryr-k8s/kuryr/pkg/controller/kit/kittest"
)

func withReady(n *corev1.Node, status corev1.ConditionStatus, since time.Time) *corev1.Node {
	n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: status, LastTransitionTime: metav1.NewTime(since)}}
	return n
}

func TestNotReadyFor(t *testing.T) {
	now := time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name string
		node *corev1.Node
		want time.Duration
	}{
		{"no condition yet", node("n"), 0},
		{"Ready", withReady(node("n"), corev1.ConditionTrue, now.Add(-time.Hour)), 0},
		{"NotReady for 2 minutes", withReady(node("n"), corev1.ConditionFalse, now.Add(-2*time.Minute)), 2 * time.Minute},
		{"Unknown (the kubelet silent) for 30 s", withReady(node("n"), corev1.ConditionUnknown, now.Add(-30*time.Second)), 30 * time.Second},
		{"NotReady with no transition time", withReady(node("n"), corev1.ConditionFalse, time.Time{}), 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := notReadyFor(tc.node, now); got != tc.want {
				t.Fatalf("not ready for %s, want %s", got, tc.want)
			}
		})
	}
}

// A node down for DownAfter loses its refuse port (an Event says so), not
// its management port; down for less, it keeps it and is looked at again
// when DownAfter is reached; Ready again, it gets a refuse port back.
func TestRefusePortWhileUp(t *testing.T) {
	up := func(name string) *corev1.Node { return withReady(node(name), corev1.ConditionTrue, time.Now()) }
	e := newEnv(t, node("n1"), up("n2"), up("n3"))
	events := &kittest.Events{}
	clock := time.Now()
	e.r.Recorder, e.r.now = events, func() time.Time { return clock }
	e.refuseSubnet()
	e.reconcile(t, "n1")
	first, ok := e.annotationOf(t, "n1", kuryrv1.RefusePortAnnotation)
	if !ok {
		t.Fatal("no refuse port for a node that tells no readiness yet")
	}
	// Its condition says down for an hour (a kubelet's clock ahead): this
	// controller has seen it down for 20 s only.
	setReady(t, e, "n1", corev1.ConditionFalse, clock.Add(-time.Hour))
	e.reconcile(t, "n1")
	clock = clock.Add(20 * time.Second)
	if res := e.reconcile(t, "n1"); res.RequeueAfter != DownAfter-20*time.Second {
		t.Errorf("down for 20 s: requeued after %s, want when DownAfter is reached", res.RequeueAfter)
	}
	if _, ok := e.annotationOf(t, "n1", kuryrv1.RefusePortAnnotation); !ok || e.fake.Get("ports", first.PortID) == nil {
		t.Fatal("down for 20 s: the refuse port went already")
	}
	setReady(t, e, "n1", corev1.ConditionUnknown, clock.Add(-2*DownAfter))
	clock = clock.Add(DownAfter)
	for range 2 { // a second reconcile while down changes nothing
		e.reconcile(t, "n1")
		if _, ok := e.annotationOf(t, "n1", kuryrv1.RefusePortAnnotation); ok || e.fake.Get("ports", first.PortID) != nil {
			t.Fatal("down for DownAfter: the refuse port is still there")
		}
		if _, ok := e.annotation(t, "n1"); !ok || e.fake.Count("ports") != 1 {
			t.Fatalf("down: the management port went too, or a refuse port came back (%d ports)", e.fake.Count("ports"))
		}
	}
	if notes := events.Notes("NodeDown"); len(notes) != 1 {
		t.Errorf("events %v, want one NodeDown", events)
	}
	// False turning Unknown starts its condition's clock again: still down,
	// no port is made.
	setReady(t, e, "n1", corev1.ConditionUnknown, clock)
	e.reconcile(t, "n1")
	if _, ok := e.annotationOf(t, "n1", kuryrv1.RefusePortAnnotation); ok || e.fake.Count("ports") != 1 {
		t.Fatalf("a node still down got a refuse port again (%d ports)", e.fake.Count("ports"))
	}
	if _, seen := e.r.downSeen.Load("n1"); !seen {
		t.Fatal("the time the node was first seen down is not kept")
	}
	setReady(t, e, "n1", corev1.ConditionTrue, clock)
	e.reconcile(t, "n1")
	if back, ok := e.annotationOf(t, "n1", kuryrv1.RefusePortAnnotation); !ok || back.PortID == first.PortID {
		t.Fatalf("Ready again: refuse annotation %+v", back)
	}
}

func setReady(t *testing.T, e *env, name string, status corev1.ConditionStatus, since time.Time) {
	t.Helper()
	var n corev1.Node
	if err := e.r.Get(context.Background(), types.NamespacedName{Name: name}, &n); err != nil {
		t.Fatal(err)
	}
	if err := e.r.Status().Update(context.Background(), withReady(&n, status, since)); err != nil {
		t.Fatal(err)
	}
}

// Half the nodes or more not Ready is the control plane losing them, not
// nodes gone down: no refuse port is removed.
func TestRefusePortsKeptWhenManyDown(t *testing.T) {
	since := time.Now().Add(-time.Hour)
	e := newEnv(t, node("n1"), withReady(node("n2"), corev1.ConditionUnknown, since), withReady(node("n3"), corev1.ConditionTrue, since))
	e.refuseSubnet()
	e.reconcile(t, "n1")
	clock := time.Now()
	e.r.now = func() time.Time { return clock }
	setReady(t, e, "n1", corev1.ConditionUnknown, since)
	e.reconcile(t, "n1")
	clock = clock.Add(2 * DownAfter)
	if res := e.reconcile(t, "n1"); res.RequeueAfter != DownAfter {
		t.Errorf("requeued after %s, want DownAfter", res.RequeueAfter)
	}
	if _, ok := e.annotationOf(t, "n1", kuryrv1.RefusePortAnnotation); !ok {
		t.Fatal("2 of 3 nodes not Ready: a refuse port was removed")
	}
}

// A node that has not been Ready since it registered is starting, not
// down.
func TestNotReadyAtRegistration(t *testing.T) {
	created := time.Now().Add(-time.Hour)
	n := withReady(node("n"), corev1.ConditionFalse, created.Add(time.Second))
	n.CreationTimestamp = metav1.NewTime(created)
	if d := notReadyFor(n, time.Now()); d != 0 {
		t.Fatalf("a node NotReady since it registered is down for %s, want 0", d)
	}
}

// The watch reconciles a node when its readiness changes, not on its
// other status updates.
func TestReadinessPredicate(t *testing.T) {
	since := time.Now()
	ready, down := withReady(node("n"), corev1.ConditionTrue, since), withReady(node("n"), corev1.ConditionUnknown, since)
	heartbeat := withReady(node("n"), corev1.ConditionTrue, since)
	heartbeat.Status.Conditions[0].LastHeartbeatTime = metav1.NewTime(since.Add(time.Minute))
	if readiness(ready) == readiness(down) || readiness(ready) != readiness(heartbeat) || readiness(node("n")) != "" {
		t.Fatalf("readiness: ready %q, down %q, heartbeat %q, none %q", readiness(ready), readiness(down), readiness(heartbeat), readiness(node("n")))
	}
}

// A node deleted while down is forgotten.
func TestDownNodeDeletedForgotten(t *testing.T) {
	e := newEnv(t)
	e.r.downSeen.Store("gone", time.Now())
	e.reconcile(t, "gone")
	if _, seen := e.r.downSeen.Load("gone"); seen {
		t.Fatal("a deleted node's down time is kept")
	}
}
