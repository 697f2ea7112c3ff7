//go:build e2e

package daemon

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/containernetworking/cni/pkg/types"

	"github.com/kuryr-k8s/kuryr/pkg/cni/api"
	"github.com/kuryr-k8s/kuryr/test/e2e/framework"
)

// daemonSocket is the socket node's daemon serves, from its installed
// configuration.
func daemonSocket(t *testing.T, node string) string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(os.Getenv("KURYR_CLOUD_NODES_DIR"), node, "cni", "net.d", "10-kuryr.conflist"))
	if err != nil {
		t.Fatal(err)
	}
	var conf struct {
		Plugins []struct {
			Socket string `json:"daemon_socket"`
		} `json:"plugins"`
	}
	if err := json.Unmarshal(raw, &conf); err != nil || len(conf.Plugins) == 0 {
		t.Fatalf("conflist: %v", err)
	}
	return conf.Plugins[0].Socket
}

func rssKiB(t *testing.T, pid string) int {
	t.Helper()
	raw, err := os.ReadFile("/proc/" + pid + "/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(raw), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == "VmRSS:" {
			n, _ := strconv.Atoi(f[1])
			return n
		}
	}
	t.Fatal("no VmRSS")
	return 0
}

// TestDaemonSocketHostileInput sends the real daemon garbage, a 100 MB
// body, a request that never finishes, a path that is not a network
// namespace and a forbidden interface name: each gets a CNI error with the
// spec's code or is cut off, and the daemon keeps serving with bounded
// memory.
func TestDaemonSocketHostileInput(t *testing.T) {
	c := framework.Connect(t)
	node := c.Nodes[0]
	sock := daemonSocket(t, node)
	pid := supervisedPid(t, node+"-kuryr-daemon")
	rssBefore := rssKiB(t, pid)
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", sock)
		}}}
	post := func(body io.Reader) (*api.Response, error) {
		resp, err := client.Post("http://kuryr-daemon"+api.Path, "application/json", body)
		if err != nil {
			return nil, err
		}
		defer resp.Body.Close()
		var r api.Response
		return &r, json.NewDecoder(resp.Body).Decode(&r)
	}
	if r, err := post(strings.NewReader("\x00garbage{")); err != nil || r.Error == nil || r.Error.Code != types.ErrDecodingFailure {
		t.Errorf("garbage: %+v %v", r, err)
	}
	huge := io.MultiReader(strings.NewReader(`{"command":"ADD","args":"`), io.LimitReader(zeros{}, 100<<20), strings.NewReader(`"}`))
	if r, err := post(huge); err == nil && (r.Error == nil || r.Error.Code != types.ErrDecodingFailure) {
		t.Errorf("100 MB body: %+v", r)
	}
	halfSent(t, sock)
	for name, req := range map[string]api.Request{
		"netns not a namespace": {Command: "ADD", ContainerID: "c1", Netns: "/etc/hostname", IfName: "eth0",
			Args: "K8S_POD_NAMESPACE=a;K8S_POD_NAME=b", Config: []byte(`{"cniVersion":"1.0.0"}`)},
		"interface name not allowed": {Command: "ADD", ContainerID: "c1", Netns: "/run/netns/x", IfName: "a/../b",
			Args: "K8S_POD_NAMESPACE=a;K8S_POD_NAME=b", Config: []byte(`{"cniVersion":"1.0.0"}`)},
	} {
		raw, _ := json.Marshal(req)
		if r, err := post(bytes.NewReader(raw)); err != nil || r.Error == nil || r.Error.Code != types.ErrInvalidEnvironmentVariables {
			t.Errorf("%s: %+v %v", name, r, err)
		}
	}
	// DEL without usable CNI_ARGS succeeds: a runtime's teardown never fails on them.
	raw, _ := json.Marshal(api.Request{Command: "DEL", ContainerID: "gone", Netns: "/run/netns/gone", IfName: "eth0", Args: "garbage;;=",
		Config: []byte(`{"cniVersion":"1.0.0"}`)})
	if r, err := post(bytes.NewReader(raw)); err != nil || r.Error != nil {
		t.Errorf("DEL with garbage CNI_ARGS: %+v %v", r, err)
	}
	raw, _ = json.Marshal(api.Request{Command: "STATUS", Config: []byte(`{"cniVersion":"1.1.0"}`)})
	if r, err := post(bytes.NewReader(raw)); err != nil || r.Error != nil {
		t.Fatalf("the daemon stopped serving: %+v %v", r, err)
	}
	if rss := rssKiB(t, pid); rss-rssBefore > 64<<10 {
		t.Errorf("the daemon grew from %d KiB to %d KiB", rssBefore, rss)
	} else {
		t.Logf("daemon resident memory %d KiB before, %d KiB after the hostile requests", rssBefore, rss)
	}
}

// halfSent: 50 clients that never finish their requests are all cut off.
func halfSent(t *testing.T, sock string) {
	t.Helper()
	var conns []net.Conn
	for i := 0; i < 50; i++ {
		conn, err := net.Dial("unix", sock)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, conn)
		fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: k\r\nContent-Length: 1000\r\n\r\n{\"comm", api.Path)
	}
	start := time.Now()
	for _, conn := range conns {
		_ = conn.SetReadDeadline(time.Now().Add(30 * time.Second))
		_, err := io.ReadAll(conn)
		conn.Close()
		if err != nil {
			t.Errorf("a half-sent request was held open: %v", err)
			return
		}
	}
	t.Logf("50 half-sent requests cut off after %s", time.Since(start).Round(time.Millisecond))
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = 'A'
	}
	return len(p), nil
}
