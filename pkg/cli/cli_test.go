package cli

import (
	"bytes"
	"context"
	"reflect"
	"strings"
	"testing"

	"github.com/kuryr-k8s/kuryr/pkg/cli/output"
)

func TestParseArgs(t *testing.T) {
	tests := []struct {
		args     []string
		wantArgs []string
		ns, out  string
		sets     int
		wantErr  bool
	}{
		{[]string{"describe", "pod/web"}, []string{"describe", "pod/web"}, "", "table", 0, false},
		{[]string{"-n", "prod", "describe", "svc", "db", "-o", "json"}, []string{"describe", "svc", "db"}, "prod", "json", 0, false},
		{[]string{"doctor", "--namespace=x", "--set", "neutron.endpoint_override=http://a", "--set", "octavia.endpoint_override=http://b"},
			[]string{"doctor"}, "x", "table", 2, false},
		{[]string{"doctor", "-o", "wide"}, nil, "", "", 0, true},
		{[]string{"doctor", "--bogus"}, nil, "", "", 0, true},
	}
	for _, tt := range tests {
		o, err := ParseArgs(tt.args, &bytes.Buffer{})
		if (err != nil) != tt.wantErr {
			t.Errorf("%q: error %v", tt.args, err)
			continue
		}
		if err != nil {
			continue
		}
		if !reflect.DeepEqual(o.Args, tt.wantArgs) || o.Kube.Namespace != tt.ns || o.Output != output.Format(tt.out) ||
			len(o.Overrides) != tt.sets || o.KuryrNamespace != "kube-system" {
			t.Errorf("%q: %+v", tt.args, o)
		}
	}
}

func TestMainUsage(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := Main(context.Background(), nil, &out, &errOut); code != 2 || errOut.Len() == 0 {
		t.Errorf("no arguments: exit %d, %q", code, errOut.String())
	}
	if code := Main(context.Background(), []string{"-o", "xml", "doctor"}, &out, &errOut); code != 2 {
		t.Errorf("-o xml: exit %d", code)
	}
}

func TestMainVersion(t *testing.T) {
	for _, args := range [][]string{{"version"}, {"--version"}, {"doctor", "--version"}} {
		var out, errOut bytes.Buffer
		// No cluster is needed to say which build this is.
		code := Main(context.Background(), append(args, "--kubeconfig", "/nonexistent"), &out, &errOut)
		if code != 0 || !strings.HasPrefix(out.String(), "kubectl-kuryr ") || errOut.Len() != 0 {
			t.Errorf("%v: exit %d, stdout %q, stderr %q", args, code, out.String(), errOut.String())
		}
	}
}
