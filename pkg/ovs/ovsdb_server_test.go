package ovs

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

const vswitchSchema = "/usr/share/openvswitch/vswitch.ovsschema"

// ovsdbServer is an ovsdb-server of the Open_vSwitch schema in a temporary
// directory, killed at the test's end.
type ovsdbServer struct {
	db, sock, ctl string
	cmd           *exec.Cmd
	logs          bytes.Buffer
}

func newOVSDBServer(t *testing.T) *ovsdbServer {
	t.Helper()
	for _, bin := range []string{"ovsdb-server", "ovsdb-tool"} {
		if _, err := exec.LookPath(bin); err != nil {
			t.Fatalf("%s not installed (openvswitch-switch; `make deps` installs it): %v", bin, err)
		}
	}
	if _, err := os.Stat(vswitchSchema); err != nil {
		t.Fatalf("no Open_vSwitch schema (openvswitch-common; `make deps` installs it): %v", err)
	}
	dir := t.TempDir()
	s := &ovsdbServer{db: filepath.Join(dir, "conf.db"), sock: filepath.Join(dir, "db.sock"),
		ctl: filepath.Join(dir, "ctl")}
	if out, err := exec.Command("ovsdb-tool", "create", s.db, vswitchSchema).CombinedOutput(); err != nil {
		t.Fatalf("ovsdb-tool create: %v: %s", err, out)
	}
	s.start(t)
	t.Cleanup(func() {
		s.stop()
		if t.Failed() {
			t.Logf("ovsdb-server: %s", s.logs.String())
		}
	})
	return s
}

func (s *ovsdbServer) start(t *testing.T) {
	t.Helper()
	s.cmd = exec.Command("ovsdb-server", s.db, "--remote=punix:"+s.sock,
		"--unixctl="+s.ctl, "--no-chdir", "-vconsole:off")
	s.cmd.Stdout, s.cmd.Stderr = &s.logs, &s.logs
	if err := s.cmd.Start(); err != nil {
		t.Fatalf("start ovsdb-server: %v", err)
	}
	for i := 0; ; i++ {
		if _, err := os.Stat(s.sock); err == nil {
			return
		} else if i > 100 {
			t.Fatalf("ovsdb-server socket: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (s *ovsdbServer) stop() {
	if s.cmd != nil && s.cmd.Process != nil {
		_ = s.cmd.Process.Kill()
		_ = s.cmd.Wait()
	}
	_ = os.Remove(s.sock)
}

// restart kills the server and starts it again on the same database.
func (s *ovsdbServer) restart(t *testing.T) {
	t.Helper()
	s.stop()
	s.start(t)
}
