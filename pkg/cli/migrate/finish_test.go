package migrate

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kuryrv1 "github.com/kuryr-k8s/kuryr/api/v1"
	"github.com/kuryr-k8s/kuryr/pkg/cli/clitest"
	"github.com/kuryr-k8s/kuryr/pkg/cli/doctor"
	"github.com/kuryr-k8s/kuryr/pkg/names"
	"github.com/kuryr-k8s/kuryr/pkg/neutron/neutrontest"
)

// TestFinish: the original's finalizers come off the objects kuryr owns
// (its KuryrPort or KuryrLoadBalancer Ready with what the original made)
// and off those being deleted; a pod kuryr does not own yet keeps its
// finalizer and makes finish fail once its time is up, without deleting
// the original's group; once it is owned, a second finish releases it,
// deletes the group and records the migration finished.
func TestFinish(t *testing.T) {
	f := clitest.New(t)
	ready := []metav1.Condition{{Type: kuryrv1.ConditionReady, Status: metav1.ConditionTrue, Reason: "Adopted"}}
	pod := func(name, uid string, deleting bool) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: name, UID: types.UID(uid),
			Finalizers: []string{names.PythonPodFinalizer}}, Spec: corev1.PodSpec{NodeName: "n1"}}
		if deleting {
			p.DeletionTimestamp = &metav1.Time{Time: time.Now()}
		}
		return p
	}
	kp := func(name, uid, port string) *kuryrv1.KuryrPort {
		return &kuryrv1.KuryrPort{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: name}, Spec: kuryrv1.KuryrPortSpec{PodUID: uid},
			Status: kuryrv1.KuryrPortStatus{VIFs: map[string]kuryrv1.VIF{kuryrv1.DefaultInterface: {PortID: port}}, Conditions: ready}}
	}
	sg := f.Neutron.Add("security-groups", neutrontest.Object{"name": "sg/a-deny", "security_group_rules": []any{}})
	p1 := f.Neutron.Add("ports", neutrontest.Object{"id": "p1", "tags": []string{names.PodTag("u1"), names.AdoptedTag}})
	rec := Record{Cluster: clitest.Cluster, Adopted: true,
		Ports:    []PortRecord{{Ref: Ref{"a", "web", "u1"}, PortID: "p1"}, {Ref: Ref{"a", "late", "u3"}, PortID: "p3"}},
		Services: []ServiceRecord{{Ref: Ref{"a", "svc", "s1"}, LoadBalancerID: "lb1"}},
		Policies: []PolicyRecord{{Ref: Ref{"a", "deny", "n1"}, SecurityGroupID: sg}}}
	data, _ := json.Marshal(rec)
	f.Objects = append(f.Objects,
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: names.MigrationConfigMap}, Data: map[string]string{recordKey: string(data)}},
		pod("web", "u1", false), kp("web", "u1", "p1"), pod("gone", "u2", true), pod("late", "u3", false),
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "svc", UID: "s1", Finalizers: []string{names.PythonServiceFinalizer}}},
		&kuryrv1.KuryrLoadBalancer{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "svc"},
			Status: kuryrv1.KuryrLoadBalancerStatus{LoadBalancer: &kuryrv1.LoadBalancerState{ID: "lb1"}, Conditions: ready}},
		&networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "deny", UID: "n1", Finalizers: []string{names.PythonPolicyFinalizer}}},
		&kuryrv1.KuryrNetworkPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "deny"}, Status: kuryrv1.KuryrNetworkPolicyStatus{Conditions: ready}})
	e := f.Env(t)
	ctx := context.Background()
	o := Options{Yes: true, Timeout: 300 * time.Millisecond, Interval: 50 * time.Millisecond}

	findings, err := Finish(ctx, e, o)
	if err != nil {
		t.Fatal(err)
	}
	if last := findings[len(findings)-1]; last.Check != "ownership" || last.Status != doctor.Fail {
		t.Fatalf("with pod a/late not owned: %+v, want ownership failing", findings)
	}
	finalizers := func(obj client.Object) []string {
		if err := e.Client.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
			return []string{"error: " + err.Error()}
		}
		return obj.GetFinalizers()
	}
	if got := finalizers(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "web"}}); len(got) != 0 {
		t.Errorf("pod a/web (owned) keeps %v", got)
	}
	if got := finalizers(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "late"}}); !slices.Equal(got, []string{names.PythonPodFinalizer}) {
		t.Errorf("pod a/late (not owned yet) has %v", got)
	}
	for _, obj := range []client.Object{&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "svc"}},
		&networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "deny"}}} {
		if got := finalizers(obj); len(got) != 0 {
			t.Errorf("%s keeps %v", obj.GetName(), got)
		}
	}
	if f.Neutron.Get("security-groups", sg) == nil {
		t.Fatal("the original's group deleted before every object was released")
	}

	if err := e.Client.Create(ctx, kp("late", "u3", "p3")); err != nil {
		t.Fatal(err)
	}
	if findings, err = Finish(ctx, e, o); err != nil {
		t.Fatal(err)
	}
	for _, fd := range findings {
		if fd.Status == doctor.Fail {
			t.Errorf("second finish: %+v", fd)
		}
	}
	if f.Neutron.Get("security-groups", sg) != nil {
		t.Error("the original's group is left")
	}
	if tags, _ := f.Neutron.Get("ports", p1)["tags"].([]string); !slices.Equal(tags, []string{names.PodTag("u1")}) {
		t.Errorf("adopted port's tags %v, want the mark taken off", tags)
	}
	if r, err := loadRecord(ctx, e.Client, "kube-system"); err != nil || r == nil || !r.Finished {
		t.Errorf("record %+v (%v), want finished", r, err)
	}
}
