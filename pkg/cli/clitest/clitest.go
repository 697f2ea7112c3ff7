// Package clitest builds a kubectl kuryr environment for unit tests: a
// fake Kubernetes (controller-runtime's fake client) holding a kuryr
// installation, fake Neutron and Octavia over HTTP, and a fake exec.
package clitest

import (
	"context"
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/kuryr-k8s/kuryr/pkg/cli/env"
	"github.com/kuryr-k8s/kuryr/pkg/config"
	"github.com/kuryr-k8s/kuryr/pkg/names"
	"github.com/kuryr-k8s/kuryr/pkg/neutron"
	"github.com/kuryr-k8s/kuryr/pkg/neutron/neutrontest"
	"github.com/kuryr-k8s/kuryr/pkg/octavia"
	"github.com/kuryr-k8s/kuryr/pkg/octavia/octaviatest"
)

// Cluster is the cluster name of the fixture's configuration.
const Cluster = "c1"

// Fixture is a healthy kuryr installation on two nodes.
type Fixture struct {
	Neutron    *neutrontest.Fake
	Octavia    *octaviatest.Fake
	Exec       *FakeExec
	Objects    []client.Object
	PodSubnet  string
	SvcSubnet  string
	PodGroup   string
	Now        time.Time
	ConnectErr error
	// Overrides are --set flags of the user (section.option=value).
	Overrides []string
}

// FakeExec answers execs with Out (or Err) and records the last command.
type FakeExec struct {
	Out  []byte
	Err  error
	Last []string
}

// Logs implements env.LogReader: Out, or Err, for every container.
func (f *FakeExec) Logs(_ context.Context, ns, pod, container string, previous bool, _ time.Duration) ([]byte, error) {
	if previous {
		return nil, fmt.Errorf("previous terminated container %q in pod %q not found", container, pod)
	}
	return []byte("log of " + ns + "/" + pod + " " + container + "\n"), nil
}

// Exec implements env.Execer.
func (f *FakeExec) Exec(_ context.Context, ns, pod, container string, cmd []string) ([]byte, error) {
	f.Last = append([]string{ns + "/" + pod + ":" + container}, cmd...)
	return f.Out, f.Err
}

// New is a healthy installation: controller with a fresh Lease, a Ready
// daemon on each of nodes n1 and n2, the CRDs, the ConfigMap, and the
// configured Neutron objects.
func New(t *testing.T) *Fixture {
	f := &Fixture{Neutron: neutrontest.New(t), Octavia: octaviatest.New(t), Exec: &FakeExec{}, Now: time.Now()}
	podNet := f.Neutron.Add("networks", neutrontest.Object{"name": "pods"})
	f.PodSubnet = f.Neutron.Add("subnets", neutrontest.Object{"name": "pods", "cidr": "10.10.0.0/16", "network_id": podNet})
	f.SvcSubnet = f.Neutron.Add("subnets", neutrontest.Object{"name": "services", "cidr": "10.20.0.0/16"})
	f.PodGroup = f.Neutron.Add("security-groups", neutrontest.Object{"name": "pods", "security_group_rules": []any{}})
	for _, s := range []string{f.PodSubnet, f.SvcSubnet} { // the cluster's router
		f.Neutron.Add("ports", neutrontest.Object{"device_id": "router-1", "device_owner": "network:router_interface",
			"fixed_ips": []neutrontest.Object{{"subnet_id": s}}})
	}
	ns := "kube-system"
	conf := fmt.Sprintf(`[kubernetes]
cluster_name = %s
controller_ha = true
[neutron]
auth_type = none
endpoint_override = http://neutron.invalid
[octavia]
endpoint_override = http://octavia.invalid
[neutron_defaults]
project = p1
pod_subnet = %s
service_subnet = %s
pod_security_groups = %s
`, Cluster, f.PodSubnet, f.SvcSubnet, f.PodGroup)
	f.Objects = append(f.Objects,
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: names.ConfigMap}, Data: map[string]string{env.ConfigMapKey: conf}},
		&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: names.Controller},
			Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](2)}, Status: appsv1.DeploymentStatus{ReadyReplicas: 2}},
		&appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: names.Daemon},
			Status: appsv1.DaemonSetStatus{DesiredNumberScheduled: 2, NumberReady: 2, UpdatedNumberScheduled: 2}},
		Lease(ns, names.Controller+"-abc", f.Now.Add(-3*time.Second)),
		Node("n1", true), Node("n2", true), DaemonPod(names.Daemon+"-1", "n1"), DaemonPod(names.Daemon+"-2", "n2"))
	for _, name := range []string{"kuryrports", "kuryrnetworks", "kuryrloadbalancers", "kuryrnetworkpolicies"} {
		f.Objects = append(f.Objects, CRD(name+".openstack.org"))
	}
	return f
}

// Lease is the controller's Lease held by holder, renewed at renew.
func Lease(ns, holder string, renew time.Time) *coordinationv1.Lease {
	return &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: names.Lease},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To(holder), LeaseDurationSeconds: ptr.To[int32](15),
			RenewTime: &metav1.MicroTime{Time: renew}}}
}

// Node is a node, Ready or not.
func Node(name string, ready bool) *corev1.Node {
	s := corev1.ConditionTrue
	if !ready {
		s = corev1.ConditionFalse
	}
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name},
		Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: s}}}}
}

// DaemonPod is a Ready kuryr-daemon pod on node.
func DaemonPod(name, node string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: name,
		Labels: map[string]string{env.LabelName: "kuryr", env.LabelComponent: "daemon"}},
		Spec: corev1.PodSpec{NodeName: node, HostNetwork: true, Containers: []corev1.Container{{Name: names.Daemon,
			Command: []string{"/kuryr-daemon"}, Args: []string{"--config-file=/etc/kuryr/kuryr.conf", "--set", "cni_daemon.node_name=$(KUBERNETES_NODE_NAME)", "--zap-log-level=info"}}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}}
}

// CRD is an established CustomResourceDefinition.
func CRD(name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"status": map[string]any{
		"conditions": []any{map[string]any{"type": "Established", "status": "True"}}}}}
	u.SetAPIVersion("apiextensions.k8s.io/v1")
	u.SetKind("CustomResourceDefinition")
	u.SetName(name)
	return u
}

// Env builds the environment over the fixture's objects; the user's
// namespace is "default".
func (f *Fixture) Env(t *testing.T) *env.Env {
	s, err := env.Scheme()
	if err != nil {
		t.Fatal(err)
	}
	c := fake.NewClientBuilder().WithScheme(s).WithObjects(f.Objects...).Build()
	return &env.Env{Client: c, Namespace: "default", KuryrNamespace: "kube-system", Exec: f.Exec, Logs: f.Exec, Overrides: f.Overrides,
		Connect: func(_ context.Context, cfg *config.Config) (*env.Cloud, error) {
			if f.ConnectErr != nil {
				return nil, f.ConnectErr
			}
			return &env.Cloud{Config: cfg, Neutron: neutron.New(f.Neutron.Client(t)), Octavia: octavia.New(f.Octavia.Client(t))}, nil
		}}
}
