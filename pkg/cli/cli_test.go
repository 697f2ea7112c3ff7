package cli

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"k8s.io/cli-runtime/pkg/genericclioptions"
)

// parse reads a command line as Main would, without running it, and
// returns the subcommand's name, its arguments and the global flags.
func parse(t *testing.T, args []string) (string, []string, *globals, error) {
	t.Helper()
	g := &globals{kube: genericclioptions.NewConfigFlags(true)}
	root := newCommand(g, &bytes.Buffer{}, &bytes.Buffer{})
	cmd, rest, err := root.Find(args)
	if err != nil {
		return "", nil, g, err
	}
	if err := cmd.ParseFlags(rest); err != nil {
		return "", nil, g, err
	}
	return cmd.Name(), cmd.Flags().Args(), g, nil
}

func TestFlagsAnywhere(t *testing.T) {
	tests := []struct {
		args     []string
		cmd      string
		wantArgs []string
		ns, out  string
		sets     int
	}{
		{[]string{"describe", "pod/web"}, "describe", []string{"pod/web"}, "", "table", 0},
		{[]string{"-n", "prod", "describe", "svc", "db", "-o", "json"}, "describe", []string{"svc", "db"}, "prod", "json", 0},
		{[]string{"doctor", "--namespace=x", "--set", "neutron.endpoint_override=http://a", "--set", "octavia.endpoint_override=http://b"},
			"doctor", []string{}, "x", "table", 2},
		{[]string{"doctor", "-o", "jsonpath={.x}"}, "doctor", []string{}, "", "jsonpath={.x}", 0},
	}
	for _, tt := range tests {
		cmd, args, g, err := parse(t, tt.args)
		if err != nil {
			t.Errorf("%q: %v", tt.args, err)
			continue
		}
		if cmd != tt.cmd || strings.Join(args, " ") != strings.Join(tt.wantArgs, " ") || *g.kube.Namespace != tt.ns ||
			g.output != tt.out || len(g.overrides) != tt.sets || g.kuryrNamespace != "kube-system" {
			t.Errorf("%q: command %s %q, namespace %q, output %q, %d overrides, kuryr namespace %q", tt.args, cmd, args,
				*g.kube.Namespace, g.output, len(g.overrides), g.kuryrNamespace)
		}
	}
}

// TestKubectlConnectionFlags: kubectl's connection flags reach the client.
func TestKubectlConnectionFlags(t *testing.T) {
	_, _, g, err := parse(t, []string{"doctor", "--server", "https://127.0.0.1:6443", "--token", "secret", "--as", "alice",
		"--as-group", "ops", "--request-timeout", "5s", "--insecure-skip-tls-verify"})
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := g.kube.ToRESTConfig()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Host != "https://127.0.0.1:6443" || cfg.BearerToken != "secret" || cfg.Impersonate.UserName != "alice" ||
		strings.Join(cfg.Impersonate.Groups, ",") != "ops" || cfg.Timeout != 5*time.Second || !cfg.Insecure {
		t.Errorf("REST config: host %s, token %q, as %+v, timeout %s, insecure %v", cfg.Host, cfg.BearerToken,
			cfg.Impersonate, cfg.Timeout, cfg.Insecure)
	}
}

func TestMainUsage(t *testing.T) {
	for _, args := range [][]string{
		{"-o", "xml", "doctor"},
		{"doctor", "-o", "jsonpath={.x"},
		{"doctor", "extra"},
		{"describe"},
		{"describe", "deployment/web"},
		{"bogus"},
		{"doctor", "--bogus"},
	} {
		var out, errOut bytes.Buffer
		if code := Main(context.Background(), args, &out, &errOut); code != exitUsage ||
			!strings.HasPrefix(errOut.String(), "error: ") {
			t.Errorf("%q: exit %d, stderr %q", args, code, errOut.String())
		}
	}
	var out, errOut bytes.Buffer
	if code := Main(context.Background(), []string{"describe", "--help"}, &out, &errOut); code != exitOK ||
		!strings.Contains(out.String(), "Examples:") {
		t.Errorf("describe --help: exit %d, %q", code, out.String())
	}
}

func TestMainVersion(t *testing.T) {
	for _, args := range [][]string{{"version"}, {"--version"}} {
		var out, errOut bytes.Buffer
		// No cluster is needed to say which build this is.
		code := Main(context.Background(), append(args, "--kubeconfig", "/nonexistent"), &out, &errOut)
		if code != exitOK || !strings.HasPrefix(out.String(), "kubectl-kuryr ") || errOut.Len() != 0 {
			t.Errorf("%v: exit %d, stdout %q, stderr %q", args, code, out.String(), errOut.String())
		}
	}
}

// TestCompletion: the shell's completion (cobra's __complete, which
// kubectl calls through kubectl_complete-kuryr) offers describe's kinds.
func TestCompletion(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := Main(context.Background(), []string{"__complete", "describe", ""}, &out, &errOut); code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	for _, k := range []string{"pod/", "svc/", "networkpolicy/"} {
		if !strings.Contains(out.String(), k+"\n") {
			t.Errorf("no %s in %q", k, out.String())
		}
	}
	out.Reset()
	if code := Main(context.Background(), []string{"completion", "bash"}, &out, &errOut); code != exitOK ||
		!strings.Contains(out.String(), "bash completion") {
		t.Errorf("completion bash: exit %d", code)
	}
}

// TestInterruptedExit: a command stopped by Ctrl-C exits 130.
func TestInterruptedExit(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var out, errOut bytes.Buffer
	code := Main(ctx, []string{"doctor", "--server", "https://127.0.0.1:1", "--insecure-skip-tls-verify"}, &out, &errOut)
	if code != exitInterrupted {
		t.Errorf("exit %d, %q", code, errOut.String())
	}
}
