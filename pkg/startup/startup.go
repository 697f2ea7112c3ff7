// Package startup is what both kuryr services share when they start: the
// command line (configuration file, option overrides, logging) and the
// connection to Kubernetes, so that an operator starts and points the
// controller and the daemons the same way.
package startup

import (
	"flag"
	"fmt"

	"github.com/go-logr/logr"
	"go.uber.org/zap/zapcore"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/kuryr-k8s/kuryr/pkg/config"
)

// Options are the shared flags.
type Options struct {
	fs         *flag.FlagSet
	configFile *string
	sets       config.Overrides
	zap        zap.Options
}

// Bind registers --config-file, --set and the logging flags on fs.
func Bind(fs *flag.FlagSet) *Options {
	// Millisecond timestamps: CNI and port latencies are read from logs.
	o := &Options{fs: fs, zap: zap.Options{TimeEncoder: zapcore.RFC3339NanoTimeEncoder}}
	o.configFile = fs.String("config-file", "/etc/kuryr/kuryr.conf", "kuryr.conf to read (empty: defaults only)")
	fs.Var(&o.sets, "set", "override an option: section.option=value (repeatable)")
	o.zap.BindFlags(fs)
	return o
}

// Logger installs the logger the flags describe (for controller-runtime
// too) and returns it under name.
func (o *Options) Logger(name string) logr.Logger {
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&o.zap)))
	return ctrl.Log.WithName(name)
}

// Load reads the configuration with the overrides, and logs what it had to
// say about the file (unknown options, original options not implemented).
// --kubeconfig, which controller-runtime registers, overrides
// [kubernetes] kubeconfig.
func (o *Options) Load(logger logr.Logger) (*config.Config, error) {
	sets := o.sets
	if f := o.fs.Lookup("kubeconfig"); f != nil && f.Value.String() != "" {
		sets = append(sets, "kubernetes.kubeconfig="+f.Value.String())
	}
	cfg, warnings, err := config.Load(*o.configFile, sets)
	for _, w := range warnings {
		logger.Info("configuration: " + w)
	}
	return cfg, err
}

// RESTConfig connects to Kubernetes as [kubernetes] says: a kubeconfig, or
// api_root with a token, or in-cluster.
func RESTConfig(k config.Kubernetes) (*rest.Config, error) {
	switch {
	case k.Kubeconfig != "":
		c, err := clientcmd.BuildConfigFromFlags("", k.Kubeconfig)
		if err != nil {
			return nil, fmt.Errorf("[kubernetes] kubeconfig %s: %w", k.Kubeconfig, err)
		}
		return c, nil
	case k.APIRoot != "":
		c := &rest.Config{Host: k.APIRoot, BearerTokenFile: k.TokenFile}
		c.TLSClientConfig = rest.TLSClientConfig{CAFile: k.SSLCACrtFile, Insecure: !k.SSLVerifyServerCrt}
		return c, nil
	}
	c, err := rest.InClusterConfig()
	if err != nil {
		return nil, fmt.Errorf("no [kubernetes] kubeconfig or api_root, and not in a cluster: %w", err)
	}
	return c, nil
}
