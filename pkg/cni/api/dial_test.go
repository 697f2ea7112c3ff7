package api

import (
	"context"
	"net"
	"path/filepath"
	"testing"
	"time"
)

// A daemon that comes back while a request waits is reached; one that does
// not is given up on after the wait.
func TestDialDaemonWaitsForRestart(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "cni.sock")
	go func() {
		time.Sleep(600 * time.Millisecond)
		ln, err := net.Listen("unix", sock)
		if err != nil {
			t.Error(err)
			return
		}
		t.Cleanup(func() { ln.Close() })
		c, err := ln.Accept()
		if err == nil {
			c.Close()
		}
	}()
	start := time.Now()
	conn, err := dialDaemon(context.Background(), sock, 5*time.Second)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	conn.Close()
	if d := time.Since(start); d < 500*time.Millisecond {
		t.Errorf("connected after %s, before the daemon listened", d)
	}

	start = time.Now()
	if _, err := dialDaemon(context.Background(), filepath.Join(t.TempDir(), "none.sock"), 500*time.Millisecond); err == nil {
		t.Fatal("dial to a socket nobody listens on succeeded")
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("gave up after %s, want about 0.5 s", d)
	}

	start = time.Now()
	if _, err := dialDaemon(context.Background(), "/nonexistent/kuryr.sock", 5*time.Second); err == nil {
		t.Fatal("dial into a missing directory succeeded")
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("a missing directory was retried for %s", d)
	}
}
