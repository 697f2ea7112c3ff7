package daemon

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/containernetworking/cni/pkg/types"
	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache/informertest"

	kuryrv1 "github.com/kuryr-k8s/kuryr/api/v1"
	"github.com/kuryr-k8s/kuryr/pkg/cni/api"
	"github.com/kuryr-k8s/kuryr/pkg/config"
	"github.com/kuryr-k8s/kuryr/pkg/ovs"
)

// runOVS is a node's OVSDB for Run: fakeOVS, with no interfaces.
type runOVS struct {
	*fakeOVS
	fakeIfaces
}

// unsyncedCache is a cache whose watches never sync: like a real one, it
// waits for them until its context ends.
type unsyncedCache struct {
	*informertest.FakeInformers
}

func (unsyncedCache) WaitForCacheSync(ctx context.Context) bool {
	<-ctx.Done()
	return false
}

// freePort is a TCP port nothing listened on a moment ago.
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// runEnv is a daemon run by Run on fakes: its configuration's paths in a
// temporary directory, its cache fake (its watches synced, or never).
type runEnv struct {
	opts     Options
	dir      string
	services chan struct{} // closed when Run starts the Services' side
	done     chan error    // Run's return
	stop     context.CancelFunc
}

func newRunEnv(t *testing.T, synced bool) *runEnv {
	t.Helper()
	dir := t.TempDir()
	bin := filepath.Join(dir, "kuryr-cni-build")
	if err := os.WriteFile(bin, []byte("#!/bin/true\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := &config.Config{}
	cfg.CNIDaemon = config.CNIDaemon{NodeName: "n1", SocketPath: filepath.Join(dir, "run", "cni.sock"),
		VIFAnnotationTimeout: time.Second, ActiveTimeout: time.Second, WaitForUsable: string(UsableImmediately),
		CNIBinDir: filepath.Join(dir, "bin"), CNIConfDir: filepath.Join(dir, "net.d"), CNIBinary: bin, CNIVersion: "1.0.0"}
	cfg.CNIHealthServer.Port = freePort(t)
	cfg.PrometheusExporter.CNIExporterPort = freePort(t)
	cfg.NeutronDefaults.OVSBridge = "br-int"
	scheme := runtime.NewScheme()
	if err := kuryrv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	e := &runEnv{dir: dir, services: make(chan struct{}), done: make(chan error, 1)}
	e.opts = Options{Config: cfg, Logger: logr.Discard(), seams: seams{
		ovs:        runOVS{fakeOVS: &fakeOVS{ports: map[string]ovs.Port{}}},
		kernel:     &fakeKernel{veths: map[string]string{}},
		restConfig: func(config.Kubernetes) (*rest.Config, error) { return &rest.Config{}, nil },
		newCache: func(*rest.Config, string) (cache.Cache, error) {
			c := &informertest.FakeInformers{Scheme: scheme}
			if !synced {
				return unsyncedCache{c}, nil
			}
			return c, nil
		},
		agents:  func(context.Context, *node) error { return nil },
		cluster: func(context.Context, *node) error { close(e.services); return nil },
	}}
	return e
}

// run starts Run, stopped at the test's end if the test did not.
func (e *runEnv) run(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	e.stop = cancel
	go func() { e.done <- Run(ctx, e.opts) }()
	t.Cleanup(func() {
		cancel()
		<-e.done
	})
}

// readyz is the status of GET /readyz on the daemon's health port, 0 when
// it does not answer.
func (e *runEnv) readyz() int {
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/readyz", e.opts.Config.CNIHealthServer.Port))
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

// stopped waits for Run to return after its context is cancelled.
func (e *runEnv) stopped(t *testing.T) error {
	t.Helper()
	e.stop()
	select {
	case err := <-e.done:
		e.done <- err // for the cleanup
		return err
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after its context ended")
		return nil
	}
}

// TestRunServesThenStops: Run serves health at once, starts the Services'
// side, serves CNI on its socket, installs kuryr-cni and the configuration
// once its watch has synced and OVS answers (then /readyz says ready), and
// on its context's end drains, removes its socket and returns nil.
func TestRunServesThenStops(t *testing.T) {
	e := newRunEnv(t, true)
	e.run(t)
	waitFor(t, "the Services' side", func() bool {
		select {
		case <-e.services:
			return true
		default:
			return false
		}
	})
	waitFor(t, "/readyz ready", func() bool { return e.readyz() == http.StatusOK })
	c := e.opts.Config.CNIDaemon
	for _, f := range []string{filepath.Join(c.CNIBinDir, "kuryr-cni"), filepath.Join(c.CNIConfDir, "10-kuryr.conflist")} {
		if _, err := os.Stat(f); err != nil {
			t.Errorf("not installed: %v", err)
		}
	}
	conf := api.NetConf{DaemonSocket: c.SocketPath, TimeoutSeconds: 5}
	if out, err := api.Call(conf, api.Request{Command: "STATUS"}); err != nil || len(out) != 0 {
		t.Fatalf("STATUS on the socket: %q, %v", out, err)
	}
	if err := e.stopped(t); err != nil {
		t.Fatalf("Run: %v", err)
	}
	if _, err := os.Stat(c.SocketPath); !os.IsNotExist(err) {
		t.Errorf("socket left behind: %v", err)
	}
}

// TestRunNotReadyUntilSynced: before the KuryrPort watch syncs the daemon
// is live but not ready, STATUS says why, nothing is installed; stopping
// then is not an error.
func TestRunNotReadyUntilSynced(t *testing.T) {
	e := newRunEnv(t, false)
	e.run(t)
	waitFor(t, "/readyz answering", func() bool { return e.readyz() == http.StatusServiceUnavailable })
	c := e.opts.Config.CNIDaemon
	waitFor(t, "the CNI socket", func() bool { _, err := os.Stat(c.SocketPath); return err == nil })
	_, err := api.Call(api.NetConf{DaemonSocket: c.SocketPath, TimeoutSeconds: 5}, api.Request{Command: "STATUS"})
	if cerr, ok := err.(*types.Error); !ok || cerr.Code != api.ErrNotReady {
		t.Fatalf("STATUS before the watch synced: %v, want code %d", err, api.ErrNotReady)
	}
	if _, err := os.Stat(filepath.Join(c.CNIConfDir, "10-kuryr.conflist")); !os.IsNotExist(err) {
		t.Errorf("configuration installed before the watch synced: %v", err)
	}
	if err := e.stopped(t); err != nil {
		t.Fatalf("Run: %v", err)
	}
}
