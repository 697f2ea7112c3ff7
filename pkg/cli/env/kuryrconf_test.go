package env

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kuryr-k8s/kuryr/pkg/names"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

func TestLoadConfig(t *testing.T) {
	cm := func(conf string) client.Object {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: names.ConfigMap},
			Data: map[string]string{ConfigMapKey: conf}}
	}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: names.Secret},
		Data: map[string][]byte{SecretKey: []byte("clouds: {}\n")}}
	cloudConf := "[neutron]\ncloud = k8s\nclouds_file = /etc/kuryr/openstack/clouds.yaml\n"
	tests := []struct {
		name       string
		objs       []client.Object
		overrides  []string
		wantErr    string
		wantClouds string // "temp": a private copy of the Secret's
		wantURL    string
	}{
		{"clouds.yaml from the Secret", []client.Object{cm(cloudConf), secret}, nil, "", "temp", ""},
		{"clouds_file overridden", []client.Object{cm(cloudConf)}, []string{"neutron.clouds_file=/home/me/clouds.yaml"}, "", "/home/me/clouds.yaml", ""},
		{"noauth with an override", []client.Object{cm("[neutron]\nauth_type = none\nendpoint_override = http://in-cluster:9696\n")},
			[]string{"neutron.endpoint_override=http://127.0.0.1:9696"}, "", "", "http://127.0.0.1:9696"},
		{"no ConfigMap", nil, nil, "read ConfigMap kube-system/kuryr-config", "", ""},
		{"no Secret", []client.Object{cm(cloudConf)}, nil, "read Secret kube-system/kuryr-openstack", "", ""},
		{"bad value", []client.Object{cm("[neutron]\ntimeout = soon\n")}, nil, "kuryr.conf: [neutron] timeout", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, _ := Scheme()
			c := fake.NewClientBuilder().WithScheme(s).WithObjects(tt.objs...).Build()
			l, err := LoadConfig(context.Background(), c, "kube-system", tt.overrides)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			file := l.Config.Neutron.CloudsFile
			switch tt.wantClouds {
			case "temp":
				st, err := os.Stat(file)
				if err != nil || st.Mode().Perm() != 0o600 {
					t.Fatalf("clouds file %s: %v, %v", file, st, err)
				}
				l.Cleanup()
				if _, err := os.Stat(file); !os.IsNotExist(err) {
					t.Errorf("clouds file %s left behind", file)
				}
			default:
				if tt.wantClouds != "" && file != tt.wantClouds {
					t.Errorf("clouds_file %q, want %q", file, tt.wantClouds)
				}
				l.Cleanup()
			}
			if tt.wantURL != "" && l.Config.Neutron.EndpointOverride != tt.wantURL {
				t.Errorf("endpoint %q", l.Config.Neutron.EndpointOverride)
			}
		})
	}
}

func TestAttachmentsCommand(t *testing.T) {
	pod := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{
		{Name: "install-cni", Args: []string{"--set", "x.y=1"}},
		{Name: names.Daemon, Command: []string{"/kuryr-daemon", "--config-file", "/etc/kuryr/kuryr.conf"},
			Args: []string{"--set=cni_health_server.port=9000", "-zap-log-level=debug", "--set", "a.b=c"}},
	}}}
	got := strings.Join(AttachmentsCommand(pod), " ")
	want := "/kuryr-daemon attachments --config-file /etc/kuryr/kuryr.conf --set=cni_health_server.port=9000 --set a.b=c"
	if got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestSetValues(t *testing.T) {
	args := []string{"/kuryr-controller", "--config-file=/etc/kuryr/kuryr.conf", "--zap-devel=false",
		"--set=kubernetes.controller_ha=true", "--set", "controller.cleanup_period=3", "-config-file", "x"}
	got := strings.Join(setValues(args), " ")
	if want := "kubernetes.controller_ha=true controller.cleanup_period=3"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

// The Secret's other files (a CA) are copied too, and the paths that name
// them in the pods name the copies.
func TestLoadConfigCopiesSecretFiles(t *testing.T) {
	conf := "[neutron]\ncloud = k8s\nclouds_file = /etc/kuryr/openstack/clouds.yaml\ncafile = /etc/kuryr/openstack/ca.pem\n"
	objs := []client.Object{
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: names.ConfigMap},
			Data: map[string]string{ConfigMapKey: conf}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: names.Secret},
			Data: map[string][]byte{SecretKey: []byte("clouds:\n  k8s:\n    cacert: /etc/kuryr/openstack/ca.pem\n"), "ca.pem": []byte("PEM")}},
	}
	s, _ := Scheme()
	l, err := LoadConfig(context.Background(), fake.NewClientBuilder().WithScheme(s).WithObjects(objs...).Build(), "kube-system", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Cleanup()
	dir := filepath.Dir(l.Config.Neutron.CloudsFile)
	clouds, err := os.ReadFile(l.Config.Neutron.CloudsFile)
	if err != nil || !strings.Contains(string(clouds), "cacert: "+filepath.Join(dir, "ca.pem")) {
		t.Errorf("clouds.yaml copy %q, %v", clouds, err)
	}
	if ca, err := os.ReadFile(filepath.Join(dir, "ca.pem")); err != nil || string(ca) != "PEM" {
		t.Errorf("ca.pem copy %q, %v", ca, err)
	}
	if l.Config.Neutron.CAFile != filepath.Join(dir, "ca.pem") {
		t.Errorf("cafile %q", l.Config.Neutron.CAFile)
	}
}

// TestSecretName: the Secret the controller mounts as its credentials
// (the chart's openstack.existingSecret), else kuryr-openstack.
func TestSecretName(t *testing.T) {
	s, err := Scheme()
	if err != nil {
		t.Fatal(err)
	}
	mounting := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: names.Controller},
		Spec: appsv1.DeploymentSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Volumes: []corev1.Volume{
			{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{}}},
			{Name: "openstack", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "mine"}}}}}}}}
	for _, c := range []struct {
		name string
		objs []client.Object
		want string
	}{
		{"existing Secret", []client.Object{mounting}, "mine"},
		{"no Deployment", nil, names.Secret},
	} {
		cl := fake.NewClientBuilder().WithScheme(s).WithObjects(c.objs...).Build()
		if got := SecretName(context.Background(), cl, "kube-system"); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}
