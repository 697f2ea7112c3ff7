package env

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kuryr-k8s/kuryr/pkg/config"
	"github.com/kuryr-k8s/kuryr/pkg/names"
	"github.com/kuryr-k8s/kuryr/pkg/neutron"
	"github.com/kuryr-k8s/kuryr/pkg/octavia"
	"github.com/kuryr-k8s/kuryr/pkg/openstack"
)

// Loaded is a configuration read from the cluster; Cleanup removes the
// private files it was read through (call it once clients are built).
type Loaded struct {
	Config   *config.Config
	Warnings []string
	dir      string
}

// Cleanup removes the temporary files.
func (l *Loaded) Cleanup() {
	if l.dir != "" {
		_ = os.RemoveAll(l.dir)
	}
}

// LoadConfig reads kuryr.conf from the ConfigMap kuryr-config in ns, with
// the controller Deployment's --set flags over it (e.g. controller_ha,
// which the manifests set there) and overrides (section.option=value) over
// both. When credentials come from
// clouds.yaml ([neutron] auth_type empty), the Secret kuryr-openstack's
// files are written to a private temporary directory whose clouds.yaml
// clouds_file then names (the file the conf names is inside the pods),
// unless an override sets clouds_file; paths into the Secret's mount (a
// CA file in it) are pointed at the copies.
func LoadConfig(ctx context.Context, c client.Reader, ns string, overrides []string) (*Loaded, error) {
	var cm corev1.ConfigMap
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: names.ConfigMap}, &cm); err != nil {
		return nil, fmt.Errorf("read ConfigMap %s/%s: %w", ns, names.ConfigMap, err)
	}
	conf, ok := cm.Data[ConfigMapKey]
	if !ok {
		return nil, fmt.Errorf("ConfigMap %s/%s has no key %s", ns, names.ConfigMap, ConfigMapKey)
	}
	dir, err := os.MkdirTemp("", "kubectl-kuryr-")
	if err != nil {
		return nil, fmt.Errorf("temporary directory: %w", err)
	}
	l := &Loaded{dir: dir}
	overrides = append(controllerSets(ctx, c, ns), overrides...)
	if err := l.load(ctx, c, ns, conf, overrides); err != nil {
		l.Cleanup()
		return nil, err
	}
	return l, nil
}

func (l *Loaded) load(ctx context.Context, c client.Reader, ns, conf string, overrides []string) error {
	path := filepath.Join(l.dir, ConfigMapKey)
	if err := os.WriteFile(path, []byte(conf), 0o600); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	cfg, warnings, err := config.Load(path, overrides)
	if err != nil {
		return fmt.Errorf("ConfigMap %s/%s: %s", ns, names.ConfigMap, strings.ReplaceAll(err.Error(), path, ConfigMapKey))
	}
	for i, w := range warnings {
		warnings[i] = strings.ReplaceAll(w, path, ConfigMapKey)
	}
	l.Config, l.Warnings = cfg, warnings
	if cfg.Neutron.AuthType != "" || cfg.Neutron.Cloud == "" || overridden(overrides, "neutron.clouds_file") {
		return nil
	}
	var s corev1.Secret
	name := SecretName(ctx, c, ns)
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &s); err != nil {
		return fmt.Errorf("[neutron] cloud is set: read Secret %s/%s: %w", ns, name, err)
	}
	if _, ok := s.Data[SecretKey]; !ok {
		return fmt.Errorf("the Secret %s/%s has no key %s", ns, name, SecretKey)
	}
	return l.copySecret(cfg, s.Data)
}

// copySecret writes every file of the Secret to the private directory,
// and points clouds_file, and the paths that name files of the Secret's
// mount (the directory of the configured clouds_file: a cacert, a cafile),
// at the copies.
func (l *Loaded) copySecret(cfg *config.Config, files map[string][]byte) error {
	mount := ""
	if cfg.Neutron.CloudsFile != "" {
		mount = filepath.Dir(cfg.Neutron.CloudsFile) + "/"
	}
	local := func(b []byte) []byte {
		if mount == "" {
			return b
		}
		return bytes.ReplaceAll(b, []byte(mount), []byte(l.dir+"/"))
	}
	for key, data := range files {
		if key != filepath.Base(key) || key == ConfigMapKey {
			continue
		}
		if key == SecretKey {
			data = local(data)
		}
		if err := os.WriteFile(filepath.Join(l.dir, key), data, 0o600); err != nil {
			return fmt.Errorf("write %s: %w", key, err)
		}
	}
	cfg.Neutron.CloudsFile = filepath.Join(l.dir, SecretKey)
	cfg.Neutron.CAFile = string(local([]byte(cfg.Neutron.CAFile)))
	return nil
}

// secretVolume is the controller's volume of its OpenStack credentials
// (the chart's).
const secretVolume = "openstack"

// SecretName is the Secret of kuryr's OpenStack credentials: the one the
// controller mounts (the chart's openstack.existingSecret, or its own),
// names.Secret when the Deployment cannot be read or mounts none.
func SecretName(ctx context.Context, c client.Reader, ns string) string {
	var d appsv1.Deployment
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: names.Controller}, &d); err == nil {
		for _, v := range d.Spec.Template.Spec.Volumes {
			if v.Name == secretVolume && v.Secret != nil && v.Secret.SecretName != "" {
				return v.Secret.SecretName
			}
		}
	}
	return names.Secret
}

// controllerSets are the --set values the controller runs with; none when
// its Deployment cannot be read (doctor says so on its own).
func controllerSets(ctx context.Context, c client.Reader, ns string) []string {
	var d appsv1.Deployment
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: names.Controller}, &d); err != nil {
		return nil
	}
	var out []string
	for _, ct := range d.Spec.Template.Spec.Containers {
		if ct.Name == names.Controller {
			out = append(out, setValues(append(append([]string{}, ct.Command...), ct.Args...))...)
		}
	}
	return out
}

func overridden(overrides []string, key string) bool {
	for _, o := range overrides {
		if k, _, _ := strings.Cut(o, "="); k == key {
			return true
		}
	}
	return false
}

// Connect authenticates to OpenStack as cfg says and returns the clients.
func Connect(ctx context.Context, cfg *config.Config) (*Cloud, error) {
	osc, err := openstack.NewClients(ctx, cfg.Neutron, cfg.Octavia.EndpointOverride)
	if err != nil {
		return nil, fmt.Errorf("OpenStack: %w", err)
	}
	c := &Cloud{Config: cfg, Neutron: neutron.New(osc.Network), OpenStackWarnings: osc.Warnings, Identity: osc.Identity}
	if cfg.Services() && osc.LoadBalancer != nil {
		c.Octavia = octavia.New(osc.LoadBalancer)
	}
	return c, nil
}
