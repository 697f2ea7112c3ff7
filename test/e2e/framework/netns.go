//go:build e2e

package framework

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/containernetworking/plugins/pkg/ns"
	"github.com/vishvananda/netns"
)

const netnsDir = "/run/netns"

// NewNetns creates a named network namespace (named "kc-test-...", so that
// `make down` removes any a crashed test leaves) and deletes it at cleanup.
func NewNetns(t testing.TB, name string) ns.NetNS {
	t.Helper()
	name = "kc-test-" + name
	err := func() error {
		// Creating a namespace switches the calling thread into it: pin the
		// goroutine and switch back before the thread is reused.
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		orig, err := netns.Get()
		if err != nil {
			return fmt.Errorf("current netns: %w", err)
		}
		defer orig.Close()
		h, err := netns.NewNamed(name)
		if err != nil {
			return fmt.Errorf("create netns %s: %w", name, err)
		}
		h.Close()
		return netns.Set(orig)
	}()
	if err != nil {
		t.Fatal(err)
	}
	n, err := ns.GetNS(filepath.Join(netnsDir, name))
	if err != nil {
		t.Fatalf("open netns %s: %v", name, err)
	}
	t.Cleanup(func() {
		n.Close()
		if err := netns.DeleteNamed(name); err != nil {
			t.Errorf("delete netns %s: %v", name, err)
		}
	})
	return n
}

// OpenNetns opens an existing named namespace (a node's, the outside one).
func OpenNetns(t testing.TB, name string) ns.NetNS {
	t.Helper()
	n, err := ns.GetNS(filepath.Join(netnsDir, name))
	if err != nil {
		t.Fatalf("open netns %s: %v", name, err)
	}
	t.Cleanup(func() { n.Close() })
	return n
}

// InNetns runs a command inside a named namespace and returns its output.
func InNetns(ctx context.Context, nsPath string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "nsenter", append([]string{"--net=" + nsPath, "--"}, args...)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("%v in %s: %w: %s", args, nsPath, err, out)
	}
	return string(out), nil
}

// Ping sends count ICMP echoes from inside n to ip, with busybox's ping
// (Debian's busybox-static is installed with the cloud).
func Ping(n ns.NetNS, ip string, count int) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(count*2+5)*time.Second)
	defer cancel()
	_, err := InNetns(ctx, n.Path(), "busybox", "ping", "-c", fmt.Sprint(count), "-W", "2", ip)
	return err
}

// ServeTCP listens on port inside n and answers every connection with reply.
// The socket belongs to n even though the goroutine serving it does not.
func ServeTCP(t testing.TB, n ns.NetNS, port int, reply string) {
	t.Helper()
	var ln net.Listener
	err := n.Do(func(ns.NetNS) error {
		var err error
		ln, err = net.Listen("tcp", fmt.Sprintf(":%d", port))
		return err
	})
	if err != nil {
		t.Fatalf("listen on %d in %s: %v", port, n.Path(), err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_, _ = c.Write([]byte(reply))
			c.Close()
		}
	}()
}

// DialTCP connects from inside n to addr and returns what the server sent.
func DialTCP(n ns.NetNS, addr string) (string, error) {
	var got string
	err := n.Do(func(ns.NetNS) error {
		c, err := net.DialTimeout("tcp", addr, 3*time.Second)
		if err != nil {
			return err
		}
		defer c.Close()
		_ = c.SetReadDeadline(time.Now().Add(3 * time.Second))
		buf := make([]byte, 256)
		k, err := c.Read(buf)
		if k > 0 {
			got = string(buf[:k])
			return nil
		}
		return fmt.Errorf("read from %s: %w", addr, err)
	})
	return got, err
}

// DialReusing connects from inside n, from local port localPort, to addr,
// sends an HTTP request, reads the answer and closes with a reset (linger
// 0), so that the next call can reuse the same 4-tuple at once.
func DialReusing(n ns.NetNS, localPort int, addr string) (string, error) {
	var got string
	err := n.Do(func(ns.NetNS) error {
		d := net.Dialer{Timeout: 3 * time.Second, LocalAddr: &net.TCPAddr{Port: localPort},
			Control: func(_, _ string, c syscall.RawConn) error {
				var serr error
				err := c.Control(func(fd uintptr) {
					serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_REUSEADDR, 1)
				})
				if err != nil {
					return err
				}
				return serr
			}}
		c, err := d.Dial("tcp", addr)
		if err != nil {
			return err
		}
		tc := c.(*net.TCPConn)
		defer func() { _ = tc.SetLinger(0); _ = tc.Close() }()
		_ = tc.SetDeadline(time.Now().Add(3 * time.Second))
		if _, err := tc.Write([]byte("GET / HTTP/1.0\r\n\r\n")); err != nil {
			return err
		}
		// HTTP/1.0: the server closes once it has answered.
		raw, err := io.ReadAll(tc)
		got = string(raw)
		if len(raw) == 0 {
			return fmt.Errorf("read from %s: %w", addr, err)
		}
		return nil
	})
	return got, err
}

// ServeOnNodes serves h on the same 127.0.0.1 port of every node's
// loopback, where kuryr (on the nodes' host network) reaches it, until the
// test ends, and returns its URL. The port is the first node's choice; if
// another node has it taken, all start again on a new one.
func (c *Cloud) ServeOnNodes(t testing.TB, h http.Handler) string {
	t.Helper()
	for attempt := 0; attempt < 5; attempt++ {
		lns, err := listenOnNodes(c.Nodes)
		if err != nil {
			t.Logf("listening on every node: %v; again on another port", err)
			continue
		}
		for _, ln := range lns {
			srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
			go func() { _ = srv.Serve(ln) }()
			t.Cleanup(func() { _ = srv.Close() })
		}
		return "http://" + lns[0].Addr().String()
	}
	t.Fatal("no port free on every node's loopback")
	return ""
}

func listenOnNodes(nodes []string) ([]net.Listener, error) {
	addr := "127.0.0.1:0"
	var lns []net.Listener
	for _, node := range nodes {
		ln, err := Listen(node, addr)
		if err != nil {
			for _, l := range lns {
				l.Close()
			}
			return nil, fmt.Errorf("%s's %s: %w", node, addr, err)
		}
		addr = ln.Addr().String()
		lns = append(lns, ln)
	}
	return lns, nil
}
