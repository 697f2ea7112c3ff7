// Package cli is kubectl-kuryr, the kubectl plugin for debugging kuryr:
// global flags, subcommands (describe, doctor) and exit statuses. main.go
// only calls Main.
package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/kuryr-k8s/kuryr/pkg/cli/describe"
	"github.com/kuryr-k8s/kuryr/pkg/cli/doctor"
	"github.com/kuryr-k8s/kuryr/pkg/cli/env"
	"github.com/kuryr-k8s/kuryr/pkg/cli/output"
	"github.com/kuryr-k8s/kuryr/pkg/config"
	"github.com/kuryr-k8s/kuryr/pkg/names"
	"github.com/kuryr-k8s/kuryr/pkg/version"
)

const usage = `kubectl kuryr: debug kuryr (Kubernetes networking on OpenStack)

Usage:
  kubectl kuryr describe pod/NAME | svc/NAME | networkpolicy/NAME   (or KIND NAME)
  kubectl kuryr doctor
  kubectl kuryr version

Flags (anywhere on the line):
`

// Options are the global flags.
type Options struct {
	Kube           env.KubeOptions
	Output         output.Format
	KuryrNamespace string
	Overrides      config.Overrides
	Version        bool
	Args           []string // subcommand and its arguments
}

// ParseArgs reads the global flags, which may come before or after the
// subcommand and its arguments.
func ParseArgs(args []string, stderr io.Writer) (*Options, error) {
	o := &Options{}
	fs := flag.NewFlagSet("kubectl kuryr", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, usage); fs.PrintDefaults() }
	fs.StringVar(&o.Kube.Kubeconfig, "kubeconfig", "", "kubeconfig file (default: $KUBECONFIG, ~/.kube/config)")
	fs.StringVar(&o.Kube.Context, "context", "", "kubeconfig context to use")
	for _, n := range []string{"n", "namespace"} {
		fs.StringVar(&o.Kube.Namespace, n, "", "namespace (default: the context's, else default)")
	}
	out := "table"
	for _, n := range []string{"o", "output"} {
		fs.StringVar(&out, n, "table", "output format: table, json or yaml")
	}
	fs.StringVar(&o.KuryrNamespace, names.NamespaceFlag, "kube-system", "namespace kuryr is installed in")
	fs.BoolVar(&o.Version, "version", false, "print the plugin's version and exit")
	fs.Var(&o.Overrides, "set", "override a kuryr.conf option for this command: section.option=value (repeatable)")
	for rest := args; ; {
		if err := fs.Parse(rest); err != nil {
			return nil, err
		}
		if fs.NArg() == 0 {
			break
		}
		o.Args, rest = append(o.Args, fs.Arg(0)), fs.Args()[1:]
	}
	f, err := output.ParseFormat(out)
	if err != nil {
		return nil, err
	}
	o.Output = f
	return o, nil
}

// errFailed: doctor found a failure (exit 1, already printed).
var errFailed = errors.New("doctor: some checks failed")

// Dispatch runs the subcommand of o on e.
func Dispatch(ctx context.Context, o *Options, e *env.Env, stdout io.Writer) error {
	switch o.Args[0] {
	case "describe":
		return describe.Run(ctx, e, o.Args[1:], o.Output, stdout)
	case "doctor":
		if len(o.Args) > 1 {
			return fmt.Errorf("doctor takes no arguments, got %q", o.Args[1:])
		}
		failed, err := doctor.Run(ctx, e, o.Output, stdout)
		if err == nil && failed {
			err = errFailed
		}
		return err
	}
	return fmt.Errorf("unknown command %q: want describe, doctor or version", o.Args[0])
}

// Main runs kubectl-kuryr and returns its exit status.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	o, err := ParseArgs(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "error: %v\n", err)
		return 2
	}
	if o.Version || len(o.Args) == 1 && o.Args[0] == "version" {
		fmt.Fprintln(stdout, version.Get().String("kubectl-kuryr"))
		return 0
	}
	if len(o.Args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	e, err := env.New(o.Kube, o.KuryrNamespace, o.Overrides)
	if err != nil {
		fmt.Fprintf(stderr, "error: %v\n", err)
		return 1
	}
	if e.Ping != nil {
		// One clear line, at once, rather than every check timing out.
		if err := e.Ping(ctx); err != nil {
			fmt.Fprintf(stderr, "error: %v\n", err)
			return 1
		}
	}
	if err := Dispatch(ctx, o, e, stdout); err != nil {
		if !errors.Is(err, errFailed) {
			fmt.Fprintf(stderr, "error: %v\n", err)
		}
		return 1
	}
	return 0
}
