package check

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kuryr-k8s/kuryr/pkg/cli/clitest"
	"github.com/kuryr-k8s/kuryr/pkg/cli/doctor"
)

func node(name string, ready bool, taints ...corev1.Taint) corev1.Node {
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	return corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.NodeSpec{Taints: taints},
		Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: status}}}}
}

func TestChoose(t *testing.T) {
	vm := corev1.Taint{Key: "kuryr.openstack.org/vm-node", Effect: corev1.TaintEffectNoSchedule}
	soft := corev1.Taint{Key: "x", Effect: corev1.TaintEffectPreferNoSchedule}
	for _, tc := range []struct {
		name   string
		nodes  []corev1.Node
		want   string
		status string
	}{
		{"two of three, by name", []corev1.Node{node("n3", true), node("n1", true), node("n2", true)}, "n1 n2", doctor.OK},
		{"not Ready, tainted skipped", []corev1.Node{node("a", false), node("b", true, vm), node("c", true, soft), node("d", true)},
			"c d", doctor.OK},
		{"one node: twice, warned", []corev1.Node{node("solo", true), node("vm", true, vm)}, "solo solo", doctor.Warn},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, f, err := choose(tc.nodes)
			if err != nil || strings.Join(got, " ") != tc.want || f.Status != tc.status {
				t.Errorf("%v, %+v, %v; want %s (%s)", got, f, err, tc.want, tc.status)
			}
		})
	}
	if _, _, err := choose([]corev1.Node{node("a", false)}); err == nil {
		t.Error("no usable node: no error")
	}
}

// TestProbePodIsRestricted: the probe pods pass the "restricted" Pod
// Security Standard their namespace enforces.
func TestProbePodIsRestricted(t *testing.T) {
	p := probePod("ns", "probe-a", "a", "n1", DefaultImage)
	sc, csc := p.Spec.SecurityContext, p.Spec.Containers[0].SecurityContext
	if !*sc.RunAsNonRoot || *sc.RunAsUser == 0 || sc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault ||
		*csc.AllowPrivilegeEscalation || len(csc.Capabilities.Drop) != 1 || csc.Capabilities.Drop[0] != "ALL" {
		t.Errorf("not restricted: %+v %+v", sc, csc)
	}
	if p.Spec.NodeName != "n1" || p.Spec.Containers[0].ReadinessProbe.TCPSocket == nil {
		t.Errorf("pinned to %q, probe %+v", p.Spec.NodeName, p.Spec.Containers[0].ReadinessProbe)
	}
}

func TestProbePolicy(t *testing.T) {
	deny := probePolicy("ns", "b", "")
	if len(deny.Spec.Ingress) != 0 || deny.Spec.PodSelector.MatchLabels[roleLabel] != "b" {
		t.Errorf("deny: %+v", deny.Spec)
	}
	allow := probePolicy("ns", "b", "a")
	if len(allow.Spec.Ingress) != 1 || allow.Spec.Ingress[0].From[0].PodSelector.MatchLabels[roleLabel] != "a" {
		t.Errorf("allow: %+v", allow.Spec)
	}
}

// TestPodsNeverReadyFailsAndCleansUp: pods that do not become Ready (the
// fake cluster runs nothing) fail the node → pod step, the later steps do
// not run, and the namespace is deleted.
func TestPodsNeverReadyFailsAndCleansUp(t *testing.T) {
	f := clitest.New(t)
	e := f.Env(t)
	findings, err := Run(context.Background(), e, Options{Image: DefaultImage, Timeout: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, x := range findings {
		got = append(got, x.Check+" "+x.Status)
	}
	if want := "nodes OK, node → pod FAIL, cleanup OK"; strings.Join(got, ", ") != want {
		t.Errorf("findings %q, want %q", strings.Join(got, ", "), want)
	}
	var nss corev1.NamespaceList
	if err := e.Client.List(context.Background(), &nss, client.MatchingLabels{managedBy: managerName}); err != nil || len(nss.Items) != 0 {
		t.Errorf("namespaces left: %v, %v", nss.Items, err)
	}
}

func TestResolvedTo(t *testing.T) {
	out := "Server:\t\t10.96.0.10\nAddress:\t10.96.0.10:53\n\nName:\tkuryr-check.ns.svc.cluster.local\nAddress: 10.96.0.123\n"
	if !resolvedTo(out, "10.96.0.123") || resolvedTo(out, "10.96.0.10") || resolvedTo(out, "10.96.0.12") {
		t.Error("resolvedTo matches the wrong lines")
	}
}

func TestUnserved(t *testing.T) {
	notReady := clitest.DaemonPod("kuryr-daemon-b", "n2")
	notReady.Status.Conditions[0].Status = corev1.ConditionFalse
	notReady.Status.ContainerStatuses = []corev1.ContainerStatus{{State: corev1.ContainerState{
		Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}}}}
	failedOld := clitest.DaemonPod("kuryr-daemon-old", "n1")
	failedOld.Status.Conditions[0].Status = corev1.ConditionFalse
	// n1's Ready pod counts, whatever the order of an old Failed one.
	pods := []corev1.Pod{*clitest.DaemonPod("kuryr-daemon-a", "n1"), *failedOld, *notReady}
	for _, c := range []struct {
		name  string
		nodes []string
		want  string
	}{
		{"served", []string{"n1", "n1"}, ""},
		{"not Ready", []string{"n1", "n2"}, "kuryr-daemon on n2 (kube-system/kuryr-daemon-b) is not Ready (CrashLoopBackOff)"},
		{"no pod", []string{"n3", "n3"}, "no kuryr-daemon pod on n3"},
	} {
		if got := strings.Join(unserved(pods, c.nodes), "; "); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}

// TestStoppedDaemonFailsAtOnce: a chosen node whose kuryr-daemon is not
// Ready fails the check before any probe pod is made.
func TestStoppedDaemonFailsAtOnce(t *testing.T) {
	f := clitest.New(t)
	e := f.Env(t)
	var pods corev1.PodList
	if err := e.Client.List(context.Background(), &pods, client.InNamespace("kube-system")); err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		if p.Spec.NodeName == "n2" {
			p.Status.Conditions[0].Status = corev1.ConditionFalse
			if err := e.Client.Status().Update(context.Background(), &p); err != nil {
				t.Fatal(err)
			}
		}
	}
	findings, err := Run(context.Background(), e, Options{Image: DefaultImage, Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if len(findings) != 1 || findings[0].Status != doctor.Fail || !strings.Contains(findings[0].Message, "kuryr-daemon on n2") {
		t.Errorf("findings %+v, want one FAIL naming kuryr-daemon on n2", findings)
	}
}
