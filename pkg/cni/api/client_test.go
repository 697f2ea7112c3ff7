package api

import (
	"bytes"
	"encoding/json"
	"net"
	"net/http"
	"path/filepath"
	"testing"

	"github.com/containernetworking/cni/pkg/skel"
	"github.com/containernetworking/cni/pkg/types"
)

// fakeDaemon answers every request on a temporary socket with resp (as
// JSON, with status) and records the request.
func fakeDaemon(t *testing.T, status int, resp string) (string, *Request) {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "cni.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	got := &Request{}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != Path {
			http.NotFound(w, r)
			return
		}
		_ = json.NewDecoder(r.Body).Decode(got)
		w.WriteHeader(status)
		_, _ = w.Write([]byte(resp))
	})}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { srv.Close() })
	return sock, got
}

func args(t *testing.T, sock string) *skel.CmdArgs {
	t.Helper()
	conf, err := json.Marshal(map[string]any{"cniVersion": "1.0.0", "name": "kuryr", "type": "kuryr-cni",
		"daemon_socket": sock, "timeout_seconds": 5})
	if err != nil {
		t.Fatal(err)
	}
	return &skel.CmdArgs{ContainerID: "c1", Netns: "/run/netns/p", IfName: "eth0",
		Args: "K8S_POD_NAMESPACE=ns;K8S_POD_NAME=p", Path: "/opt/cni/bin", StdinData: conf}
}

// Forward hands the runtime's request to the daemon as is and prints the
// daemon's result unchanged; the daemon's CNI errors come back as they are.
func TestForward(t *testing.T) {
	sock, got := fakeDaemon(t, http.StatusOK, `{"result":"eyJjbmlWZXJzaW9uIjoiMS4wLjAifQ=="}`)
	var out bytes.Buffer
	a := args(t, sock)
	if err := Forward("ADD", a, &out); err != nil {
		t.Fatalf("ADD: %v", err)
	}
	if out.String() != `{"cniVersion":"1.0.0"}` {
		t.Errorf("printed %q", out.String())
	}
	if got.Command != "ADD" || got.ContainerID != "c1" || got.Netns != a.Netns || got.IfName != "eth0" ||
		got.Args != a.Args || got.Path != a.Path || !bytes.Equal(got.Config, a.StdinData) {
		t.Errorf("daemon got %+v", got)
	}

	sock, _ = fakeDaemon(t, http.StatusInternalServerError, `{"error":{"code":102,"msg":"plug failed"}}`)
	out.Reset()
	err := Forward("ADD", args(t, sock), &out)
	if e, ok := err.(*types.Error); !ok || e.Code != ErrPlug || e.Msg != "plug failed" || out.Len() != 0 {
		t.Errorf("daemon's error: %v, printed %q", err, out.String())
	}
}

// What the daemon does not answer, or answers with no CNI answer, and a
// configuration that is not JSON, are CNI errors with their own codes.
func TestForwardErrors(t *testing.T) {
	sock, _ := fakeDaemon(t, http.StatusBadGateway, "not json")
	tests := []struct {
		name string
		a    *skel.CmdArgs
		code uint
	}{
		{"invalid configuration", &skel.CmdArgs{StdinData: []byte("{")}, types.ErrDecodingFailure},
		{"no daemon", args(t, "/nonexistent/cni.sock"), types.ErrTryAgainLater},
		{"not an answer", args(t, sock), types.ErrInternal},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			err := Forward("DEL", tt.a, &out)
			if e, ok := err.(*types.Error); !ok || e.Code != tt.code || out.Len() != 0 {
				t.Fatalf("got %v (printed %q), want code %d", err, out.String(), tt.code)
			}
		})
	}
}
