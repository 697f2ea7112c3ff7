package supportbundle

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kuryr-k8s/kuryr/pkg/cli/clitest"
	"github.com/kuryr-k8s/kuryr/pkg/names"
	"github.com/kuryr-k8s/kuryr/pkg/neutron/neutrontest"
)

// TestBundleHasBothSidesAndNoSecret: the archive holds the Kubernetes
// side, the logs, the nodes' attachments, the OpenStack side and doctor's
// findings; the credentials never.
func TestBundleHasBothSidesAndNoSecret(t *testing.T) {
	f := clitest.New(t)
	f.Neutron.Add("ports", neutrontest.Object{"name": "default/web", "tags": []string{names.ClusterTag(clitest.Cluster)}})
	f.Objects = append(f.Objects, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: names.Secret},
		Data: map[string][]byte{"clouds.yaml": []byte("application_credential_secret: TOPSECRET")}})
	f.Exec.Out = []byte("pod default/web port 1234 ovs tap1234\n")
	// A user's pod with a secret in its environment, and kubectl's copy.
	f.Objects = append(f.Objects, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "db",
		Annotations: map[string]string{"kubectl.kubernetes.io/last-applied-configuration": `{"env":[{"name":"DB_PASSWORD","value":"TOPSECRET"}]}`}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "db", Env: []corev1.EnvVar{
			{Name: "DB_PASSWORD", Value: "TOPSECRET"}, {Name: "DB_USER", Value: "alice"}}}}}})
	out := filepath.Join(t.TempDir(), "b.tar.gz")
	files, missing, err := Run(context.Background(), f.Env(t), Options{Output: out})
	if err != nil {
		t.Fatal(err)
	}
	got, err := ReadArchive(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != files {
		t.Errorf("%d files written, %d said", len(got), files)
	}
	for _, want := range []string{"kubernetes/kuryrports.yaml", "kubernetes/nodes.yaml", "kubernetes/kuryr.conf",
		"logs/kuryr-daemon-1_kuryr-daemon.log", "nodes/n1-attachments.txt", "openstack/ports.json", "doctor.txt", "README.txt"} {
		if _, ok := got[want]; !ok {
			t.Errorf("no %s in %v", want, keys(got))
		}
	}
	if !strings.Contains(got["kubernetes/pods.yaml"], "alice") {
		t.Errorf("pods.yaml lost what is no secret:\n%s", got["kubernetes/pods.yaml"])
	}
	if !strings.Contains(got["openstack/ports.json"], "default/web") {
		t.Errorf("ports.json: %s", got["openstack/ports.json"])
	}
	for name, content := range got {
		if strings.Contains(content, "TOPSECRET") {
			t.Errorf("%s holds the credentials", name)
		}
	}
	t.Logf("not collected: %v", missing)
}

func keys(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
