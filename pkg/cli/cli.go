// Package cli is kubectl-kuryr, the kubectl plugin for debugging kuryr: the
// command tree (cobra, with kubectl's connection flags from cli-runtime),
// its global flags and exit statuses. main.go only calls Main.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/cli-runtime/pkg/genericclioptions"

	"github.com/kuryr-k8s/kuryr/pkg/cli/env"
	"github.com/kuryr-k8s/kuryr/pkg/cli/output"
	"github.com/kuryr-k8s/kuryr/pkg/config"
	"github.com/kuryr-k8s/kuryr/pkg/names"
	"github.com/kuryr-k8s/kuryr/pkg/version"
)

// Exit statuses.
const (
	exitOK     = 0
	exitFailed = 1 // a command failed, or doctor found a failure
	exitUsage  = 2 // the command line is wrong
	// exitInterrupted: stopped by Ctrl-C or SIGTERM, as a shell reports a
	// command killed by SIGINT.
	exitInterrupted = 130
)

// usageError is a wrong command line (exit 2).
type usageError struct{ error }

func (e usageError) Unwrap() error { return e.error }

// errFailed: doctor or check found a failure (exit 1, already printed).
var errFailed = errors.New("some checks failed")

// globals are the flags every command takes, anywhere on the line.
type globals struct {
	kube           *genericclioptions.ConfigFlags
	output         string
	kuryrNamespace string
	overrides      config.Overrides
}

func (g *globals) bind(fs *pflag.FlagSet) {
	g.kube.AddFlags(fs)
	fs.StringVarP(&g.output, "output", "o", "table", "output format: table, wide, json, yaml or jsonpath=TEMPLATE")
	fs.StringVar(&g.kuryrNamespace, names.NamespaceFlag, "kube-system", "namespace kuryr is installed in")
	fs.Var(&g.overrides, "set", "override a kuryr.conf option for this command: section.option=value (repeatable)")
}

// format reads -o.
func (g *globals) format() (output.Format, error) {
	f, err := output.ParseFormat(g.output)
	if err != nil {
		return "", usageError{err}
	}
	return f, nil
}

// prepare reads -o, then connects: a wrong -o is told before any request.
func (g *globals) prepare(ctx context.Context) (*env.Env, output.Format, error) {
	f, err := g.format()
	if err != nil {
		return nil, "", err
	}
	e, err := g.connect(ctx)
	return e, f, err
}

// connect builds the environment the commands work in, and checks at once
// that the API server answers: one clear line rather than every request
// timing out.
func (g *globals) connect(ctx context.Context) (*env.Env, error) {
	e, err := env.New(g.kube, g.kuryrNamespace, g.overrides)
	if err != nil {
		return nil, err
	}
	if e.Ping != nil {
		if err := e.Ping(ctx); err != nil {
			return nil, err
		}
	}
	return e, nil
}

// NewCommand is `kubectl kuryr` and its subcommands.
func NewCommand(stdout, stderr io.Writer) *cobra.Command {
	return newCommand(&globals{kube: genericclioptions.NewConfigFlags(true)}, stdout, stderr)
}

func newCommand(g *globals, stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:         "kubectl-kuryr",
		Annotations: map[string]string{cobra.CommandDisplayNameAnnotation: "kubectl kuryr"},
		Short:       "Debug kuryr: Kubernetes networking on OpenStack Neutron and Octavia",
		Long: `kubectl kuryr shows what kuryr made of a pod, Service or NetworkPolicy, in Kubernetes,
in OpenStack and on the node, and checks a kuryr installation.

It connects as kubectl does (your kubeconfig and kubectl's connection flags) and reads
kuryr's own configuration from the cluster: the ConfigMap kuryr-config and the Secret
kuryr-openstack in --kuryr-namespace.`,
		Version:           version.Get().Version,
		SilenceErrors:     true,
		SilenceUsage:      true,
		CompletionOptions: cobra.CompletionOptions{HiddenDefaultCmd: false},
	}
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.SetVersionTemplate(version.Get().String("kubectl-kuryr") + "\n")
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	g.bind(root.PersistentFlags())
	// Declared here rather than left to cobra, which adds it only once the
	// line is parsed, and would take the flag after it for its value.
	root.Flags().Bool("version", false, "print the plugin's version and exit")
	root.AddCommand(describeCommand(g), doctorCommand(g), checkCommand(g), uninstallCommand(g), supportBundleCommand(g), migrateCommand(g), versionCommand())
	return root
}

// Main runs kubectl-kuryr with args and returns its exit status.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	cmd := NewCommand(stdout, stderr)
	cmd.SetArgs(args)
	err := cmd.ExecuteContext(ctx)
	var usage usageError
	switch {
	case err == nil:
		return exitOK
	case ctx.Err() != nil:
		fmt.Fprintf(stderr, "error: %v\n", err)
		return exitInterrupted
	case errors.Is(err, errFailed):
		return exitFailed
	case errors.As(err, &usage) || isCobraUsage(err):
		fmt.Fprintf(stderr, "error: %v\nSee 'kubectl kuryr --help'.\n", err)
		return exitUsage
	}
	fmt.Fprintf(stderr, "error: %v\n", err)
	return exitFailed
}

// isCobraUsage: cobra's own errors for a wrong command line, which it
// returns unwrapped (an unknown subcommand).
func isCobraUsage(err error) bool {
	return strings.HasPrefix(err.Error(), "unknown command ")
}
