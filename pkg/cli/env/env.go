// Package env is what kubectl kuryr works with: the user's Kubernetes
// clients (from their kubeconfig), the kuryr installation's names, its
// configuration (read from the kuryr-config ConfigMap and the
// kuryr-openstack Secret) and OpenStack clients built from it.
package env

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/discovery"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kuryrv1 "github.com/kuryr-k8s/kuryr/api/v1"
	"github.com/kuryr-k8s/kuryr/pkg/config"
	"github.com/kuryr-k8s/kuryr/pkg/names"
	"github.com/kuryr-k8s/kuryr/pkg/neutron"
	"github.com/kuryr-k8s/kuryr/pkg/octavia"
)

// Keys and paths of the kuryr installation's objects (their names are in
// package names).
const (
	ConfigMapKey = "kuryr.conf"
	SecretKey    = "clouds.yaml"
	DaemonBinary = "/" + names.Daemon
	// Labels of kuryr's pods.
	LabelName      = "app.kubernetes.io/name"
	LabelComponent = "app.kubernetes.io/component"
)

// Cloud is the configuration kuryr runs with and OpenStack clients built
// from it; Octavia is nil when kuryr serves no Services.
type Cloud struct {
	Config   *config.Config
	Warnings []string
	// OpenStackWarnings are what building the clients warned about (TLS
	// verification off, an Octavia endpoint not usable).
	OpenStackWarnings []string
	// Identity is how kuryr's credential authenticates (openstack.Clients).
	Identity string
	Neutron  *neutron.Client
	Octavia  *octavia.Client
}

// Env is what the subcommands use.
type Env struct {
	Client         client.Client
	Namespace      string // the user's (-n, else the context's, else default)
	KuryrNamespace string
	Exec           Execer
	Logs           LogReader
	// Overrides are --set section.option=value, applied over the ConfigMap.
	Overrides []string
	// Ping says whether the API server answers, within pingTimeout (nil:
	// not checked, as in tests with a fake client).
	Ping func(ctx context.Context) error
	// Connect builds OpenStack clients from a configuration (tests fake
	// OpenStack through it); nil: openstack.NewClients.
	Connect func(ctx context.Context, cfg *config.Config) (*Cloud, error)

	once  sync.Once
	cloud *Cloud
	err   error
}

// Cloud reads the configuration and connects to OpenStack, once.
func (e *Env) Cloud(ctx context.Context) (*Cloud, error) {
	e.once.Do(func() { e.cloud, e.err = e.connect(ctx) })
	return e.cloud, e.err
}

func (e *Env) connect(ctx context.Context) (*Cloud, error) {
	l, err := LoadConfig(ctx, e.Client, e.KuryrNamespace, e.Overrides)
	if err != nil {
		return nil, err
	}
	defer l.Cleanup()
	connect := e.Connect
	if connect == nil {
		connect = Connect
	}
	c, err := connect(ctx, l.Config)
	if err != nil {
		return nil, err
	}
	c.Warnings = l.Warnings
	return c, nil
}

// Scheme knows Kubernetes' kinds and kuryr's.
func Scheme() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		return nil, err
	}
	if err := kuryrv1.AddToScheme(s); err != nil {
		return nil, err
	}
	return s, nil
}

// requestTimeout bounds each Kubernetes request unless --request-timeout
// says otherwise. OpenStack requests are bounded by
// [neutron] timeout.
const requestTimeout = 30 * time.Second

// pingTimeout bounds the first request: an API server that does not answer
// /version within it is reported at once, instead of every check waiting
// out requestTimeout.
var pingTimeout = 10 * time.Second

// pinger asks the API server for its version, within pingTimeout or a
// longer --request-timeout.
func pinger(cfg *rest.Config) (func(ctx context.Context) error, error) {
	timeout := max(pingTimeout, cfg.Timeout)
	d, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("kubernetes client: %w", err)
	}
	return func(ctx context.Context) error {
		start := time.Now()
		ctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		if err := d.RESTClient().Get().AbsPath("/version").Do(ctx).Error(); err != nil {
			if ctx.Err() != nil && errors.Is(ctx.Err(), context.DeadlineExceeded) {
				err = fmt.Errorf("no answer in %s", time.Since(start).Round(100*time.Millisecond))
			}
			return fmt.Errorf("the Kubernetes API server at %s: %w", cfg.Host, err)
		}
		return nil
	}, nil
}

// New connects to Kubernetes as kubectl's connection flags say (kubeconfig,
// context, server, token, impersonation, request timeout, ...: cli-runtime's
// ConfigFlags) and the user's kubeconfig.
func New(flags genericclioptions.RESTClientGetter, kuryrNamespace string, overrides []string) (*Env, error) {
	restCfg, err := flags.ToRESTConfig()
	if err != nil {
		return nil, fmt.Errorf("kubeconfig: %w", err)
	}
	ping, err := pinger(restCfg) // with --request-timeout if the user gave one
	if err != nil {
		return nil, err
	}
	if restCfg.Timeout == 0 {
		restCfg.Timeout = requestTimeout
	}
	ns, _, err := flags.ToRawKubeConfigLoader().Namespace()
	if err != nil || ns == "" {
		ns = "default"
	}
	scheme, err := Scheme()
	if err != nil {
		return nil, err
	}
	c, err := client.New(restCfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, fmt.Errorf("kubernetes client: %w", err)
	}
	return &Env{Client: c, Namespace: ns, KuryrNamespace: kuryrNamespace, Exec: &SPDYExec{Config: rest.CopyConfig(restCfg)},
		Logs: &PodLogs{Config: rest.CopyConfig(restCfg)}, Overrides: overrides, Ping: ping}, nil
}
