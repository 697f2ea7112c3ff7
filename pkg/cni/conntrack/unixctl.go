package conntrack

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Unixctl speaks ovs-vswitchd's control protocol (JSON-RPC 1.0 over its
// unix socket, what ovs-appctl speaks): the daemon needs no OVS binaries.
// The dpctl/ commands work on the kernel datapath too (ovs-vswitchd relays
// them to the kernel's connection tracker over netlink).
type Unixctl struct {
	// Path is the socket; empty: found next to the OVSDB socket (see
	// CtlPath) at each call, as ovs-vswitchd names it after its pid.
	Path string
	// Dir is where ovs-vswitchd keeps its pidfile and socket.
	Dir string
}

// callTimeout bounds one command; a dump of a big table takes a while.
const callTimeout = 20 * time.Second

// CtlPath is ovs-vswitchd's control socket in dir: ovs-vswitchd.<pid>.ctl
// (its default name), else ovs-vswitchd.ctl (set with --unixctl).
func CtlPath(dir string) (string, error) {
	raw, err := os.ReadFile(filepath.Join(dir, "ovs-vswitchd.pid"))
	if err == nil {
		if pid, err := strconv.Atoi(strings.TrimSpace(string(raw))); err == nil {
			p := filepath.Join(dir, fmt.Sprintf("ovs-vswitchd.%d.ctl", pid))
			if _, err := os.Stat(p); err == nil {
				return p, nil
			}
		}
	}
	p := filepath.Join(dir, "ovs-vswitchd.ctl")
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("no ovs-vswitchd control socket in %s: %w", dir, err)
	}
	return p, nil
}

type request struct {
	Method string   `json:"method"`
	Params []string `json:"params"`
	ID     int      `json:"id"`
}

type response struct {
	Result *string `json:"result"`
	Error  any     `json:"error"`
	ID     int     `json:"id"`
}

// Call runs one command and returns its output.
func (u *Unixctl) Call(ctx context.Context, method string, params ...string) (string, error) {
	path := u.Path
	if path == "" {
		var err error
		if path, err = CtlPath(u.Dir); err != nil {
			return "", err
		}
	}
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	var d net.Dialer
	c, err := d.DialContext(ctx, "unix", path)
	if err != nil {
		return "", fmt.Errorf("ovs-vswitchd control socket: %w", err)
	}
	defer c.Close()
	if dl, ok := ctx.Deadline(); ok {
		_ = c.SetDeadline(dl)
	}
	if params == nil {
		params = []string{}
	}
	if err := json.NewEncoder(c).Encode(request{Method: method, Params: params}); err != nil {
		return "", fmt.Errorf("%s: %w", method, err)
	}
	var r response
	if err := json.NewDecoder(c).Decode(&r); err != nil {
		return "", fmt.Errorf("%s: reading the answer: %w", method, err)
	}
	if r.Error != nil {
		return "", fmt.Errorf("%s: %v", method, r.Error)
	}
	if r.Result == nil {
		return "", nil
	}
	return *r.Result, nil
}
