package uninstall

import (
	"context"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kuryrv1 "github.com/kuryr-k8s/kuryr/api/v1"
	"github.com/kuryr-k8s/kuryr/pkg/cli/clitest"
	"github.com/kuryr-k8s/kuryr/pkg/cli/doctor"
	"github.com/kuryr-k8s/kuryr/pkg/names"
	"github.com/kuryr-k8s/kuryr/pkg/neutron/neutrontest"
)

// installed is a cluster with kuryr's objects in both places: a pod's
// port (young: uninstall does not spare young objects) and its KuryrPort
// with its finalizer, the shared open group, a node's annotation, and the
// cloud's own objects (the fixture's subnets, router ports and pods' group).
func installed(t *testing.T) (*clitest.Fixture, map[string]string) {
	f := clitest.New(t)
	tag := names.ClusterTag(clitest.Cluster)
	ids := map[string]string{
		"port": f.Neutron.Add("ports", neutrontest.Object{"tags": []string{tag, names.PodTag("uid-web")},
			"created_at": time.Now().UTC().Format(time.RFC3339), "binding:host_id": "n1", "binding:vif_type": "ovs"}),
		"open": f.Neutron.Add("security-groups", neutrontest.Object{"name": names.OpenIngress,
			"tags": []string{tag, names.PolicyTag(names.OpenIngress)}, "security_group_rules": []any{},
			"created_at": "2020-01-01T00:00:00Z"}),
		"other-cluster": f.Neutron.Add("ports", neutrontest.Object{"tags": []string{names.ClusterTag("c2"), names.PodTag("uid-x")},
			"created_at": "2020-01-01T00:00:00Z"}),
		// Outside the sweep's classes: the address-group probe's port,
		// left by a controller stopped in the middle of its probe.
		"probe": f.Neutron.Add("ports", neutrontest.Object{"tags": []string{tag, names.AddressGroupProbeTag},
			"created_at": "2020-01-01T00:00:00Z"}),
		// A port whose tags were never written: only its KuryrPort
		// records it.
		"untagged": f.Neutron.Add("ports", neutrontest.Object{"name": "default/db", "created_at": "2020-01-01T00:00:00Z"}),
	}
	kp := &kuryrv1.KuryrPort{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web",
		Finalizers: []string{kuryrv1.KuryrPortFinalizer}},
		Spec:   kuryrv1.KuryrPortSpec{PodUID: "uid-web", PodNodeName: "n1"},
		Status: kuryrv1.KuryrPortStatus{VIFs: map[string]kuryrv1.VIF{"eth0": {PortID: ids["untagged"], Default: true}}}}
	for _, o := range f.Objects {
		if n, ok := o.(*corev1.Node); ok && n.Name == "n1" {
			n.Annotations = map[string]string{kuryrv1.NodePortAnnotation: `{"portId":"x"}`, "keep": "me"}
		}
	}
	f.Objects = append(f.Objects, kp)
	return f, ids
}

func TestWithoutYesRemovesNothing(t *testing.T) {
	f, ids := installed(t)
	e := f.Env(t)
	findings, err := Run(context.Background(), e, Options{Timeout: time.Second, Interval: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range findings {
		if x.Status != doctor.Warn || !strings.HasPrefix(x.Message, "would") && x.Check != "uninstall" {
			t.Errorf("%s: %s %s", x.Check, x.Status, x.Message)
		}
	}
	if f.Neutron.Get("ports", ids["port"]) == nil {
		t.Error("the pod's port was deleted")
	}
	var kp kuryrv1.KuryrPort
	if err := e.Client.Get(context.Background(), client.ObjectKey{Namespace: "default", Name: "web"}, &kp); err != nil {
		t.Errorf("the KuryrPort: %v", err)
	}
}

func TestUninstallRemovesKuryrsAndNothingElse(t *testing.T) {
	f, ids := installed(t)
	e := f.Env(t)
	ports, groups := f.Neutron.Count("ports"), f.Neutron.Count("security-groups")
	findings, err := Run(context.Background(), e, Options{Yes: true, Timeout: 5 * time.Second, Interval: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, x := range findings {
		got = append(got, x.Check+" "+x.Status)
		if x.Status != doctor.OK {
			t.Errorf("%s: %s %s", x.Check, x.Status, x.Message)
		}
	}
	if want := "controller OK, records OK, kuryr objects OK, nodes OK, openstack OK"; strings.Join(got, ", ") != want {
		t.Errorf("steps %q, want %q", strings.Join(got, ", "), want)
	}
	for _, what := range []string{"port", "open", "probe", "untagged"} {
		collection := "ports"
		if what == "open" {
			collection = "security-groups"
		}
		if f.Neutron.Get(collection, ids[what]) != nil {
			t.Errorf("kuryr's %s left", what)
		}
	}
	if f.Neutron.Get("ports", ids["other-cluster"]) == nil || f.Neutron.Count("ports") != ports-3 ||
		f.Neutron.Count("security-groups") != groups-1 {
		t.Errorf("not just kuryr's deleted: ports %d → %d, groups %d → %d", ports, f.Neutron.Count("ports"),
			groups, f.Neutron.Count("security-groups"))
	}
	ctx := context.Background()
	var kps kuryrv1.KuryrPortList
	if err := e.Client.List(ctx, &kps); err != nil || len(kps.Items) != 0 {
		t.Errorf("KuryrPorts left: %v %v", kps.Items, err)
	}
	var d appsv1.Deployment
	if err := e.Client.Get(ctx, client.ObjectKey{Namespace: "kube-system", Name: names.Controller}, &d); err != nil || *d.Spec.Replicas != 0 {
		t.Errorf("the controller is not scaled to 0: %v", err)
	}
	var n corev1.Node
	if err := e.Client.Get(ctx, client.ObjectKey{Name: "n1"}, &n); err != nil || n.Annotations["keep"] != "me" ||
		n.Annotations[kuryrv1.NodePortAnnotation] != "" {
		t.Errorf("node annotations %v (%v): want kuryr's removed, others kept", n.Annotations, err)
	}
}
