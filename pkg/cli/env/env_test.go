package env

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/cli-runtime/pkg/genericclioptions"
)

// TestPingSilentAPIServer: an API server that accepts connections and
// never answers is reported once, within pingTimeout, not after every
// check's request timeout.
func TestPingSilentAPIServer(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			defer c.Close() // held open, silent
		}
	}()
	kubeconfig := filepath.Join(t.TempDir(), "config")
	if err := os.WriteFile(kubeconfig, []byte(fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://%s", insecure-skip-tls-verify: true}}]
users: [{name: u, user: {token: x}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`, l.Addr())), 0o600); err != nil {
		t.Fatal(err)
	}
	defer func(d time.Duration) { pingTimeout = d }(pingTimeout)
	pingTimeout = 300 * time.Millisecond
	flags := genericclioptions.NewConfigFlags(true)
	flags.KubeConfig = &kubeconfig
	e, err := New(flags, "kube-system", nil)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	err = e.Ping(context.Background())
	if took := time.Since(start); err == nil || took > 3*time.Second {
		t.Fatalf("Ping: %v after %s; want an error within about %s", err, took, pingTimeout)
	}
	if want := "the Kubernetes API server at https://" + l.Addr().String() + ": no answer in 300ms"; err.Error() != want {
		t.Errorf("Ping: %q, want %q", err, want)
	}
	if strings.Contains(err.Error(), "\n") {
		t.Errorf("not one line: %q", err)
	}
}
