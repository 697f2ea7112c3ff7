//go:build e2e

package nested

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/kuryr-k8s/kuryr/test/e2e/framework"
	"github.com/kuryr-k8s/kuryr/test/e2e/guest/guestconfig"
)

// repoRoot is the repository's root (the tests run in their package's
// directory).
const repoRoot = "../../.."

// guest is a QEMU guest (software emulation: these machines have no
// /dev/kvm) whose /init is test/e2e/guest, its NIC a tap plugged into a
// hypervisor node's br-int as Nova plugs an instance's.
type guest struct {
	mu      sync.Mutex
	console []string
	lines   chan string
}

// bootGuest boots a guest with cfg on hypervisor node, its NIC the tap of
// the Neutron port portID (MAC mac), and stops it at cleanup.
func bootGuest(t *testing.T, c *framework.Cloud, node, portID, mac string, cfg guestconfig.Config) *guest {
	t.Helper()
	if _, err := exec.LookPath("qemu-system-x86_64"); err != nil {
		t.Fatalf("no QEMU (%v): the local cloud's packages bring it (hack/local-cloud/install-packages.sh)", err)
	}
	kernel := guestKernel(t)
	cfg.Modules = strings.Fields(readFile(t, filepath.Join(kernel, "modules.order")))
	initrd := guestInitrd(t, kernel, cfg)
	tap := "tg" + portID[:11]
	netns := "/run/netns/" + c.NodeNetns(node)
	ctx := context.Background()
	t.Cleanup(func() { _, _ = framework.InNetns(context.Background(), netns, "ip", "link", "del", tap) })
	for _, args := range [][]string{{"ip", "tuntap", "add", "dev", tap, "mode", "tap"}, {"ip", "link", "set", tap, "up"}} {
		if out, err := framework.InNetns(ctx, netns, args...); err != nil {
			t.Fatalf("%v: %v: %s", args, err, out)
		}
	}
	db := c.NodeOVSDB[node]
	// Registered first: an add-port that timed out may have committed.
	t.Cleanup(func() {
		_ = exec.Command("ovs-vsctl", "--timeout=10", "--db="+db, "--if-exists", "del-port", "br-int", tap).Run()
	})
	if out, err := exec.Command("ovs-vsctl", "--timeout=10", "--db="+db, "--", "--may-exist", "add-port", "br-int", tap,
		"--", "set", "Interface", tap, "external_ids:iface-id="+portID, "external_ids:attached-mac="+mac,
		"external_ids:iface-status=active", "external_ids:vm-uuid="+portID).CombinedOutput(); err != nil {
		t.Fatalf("ovs-vsctl add-port %s: %v: %s", tap, err, out)
	}
	// No vnet headers, no checksum offload: the userspace datapath does
	// not complete partial checksums.
	qemu := exec.Command("ip", "netns", "exec", c.NodeNetns(node), "qemu-system-x86_64", "-accel", "tcg",
		"-m", "512", "-smp", "1", "-nographic", "-no-reboot", "-kernel", filepath.Join(kernel, "vmlinuz"), "-initrd", initrd,
		"-append", "console=ttyS0 panic=-1 quiet loglevel=1", // no kernel message inside a report line
		"-netdev", "tap,id=n0,ifname="+tap+",script=no,downscript=no,vnet_hdr=off",
		"-device", "virtio-net-pci,netdev=n0,mac="+mac+",csum=off,guest_csum=off")
	out, err := qemu.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	qemu.Stderr = qemu.Stdout
	// QEMU dies with the test binary, even one killed by a timeout (ip
	// netns exec execs it: same process).
	qemu.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := qemu.Start(); err != nil {
		t.Fatalf("start qemu: %v", err)
	}
	g := &guest{lines: make(chan string, 1000)}
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer close(g.lines) // the guest is gone: wait stops waiting
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			line := sc.Text()
			g.mu.Lock()
			g.console = append(g.console, line)
			g.mu.Unlock()
			if i := strings.Index(line, "GUEST-"); i >= 0 {
				select {
				case g.lines <- line[i:]:
				default: // never block the reader (the guest reports a handful)
				}
			}
		}
	}()
	t.Cleanup(func() {
		_ = qemu.Process.Kill()
		<-done
		_ = qemu.Wait()
		if t.Failed() {
			g.mu.Lock()
			t.Logf("guest console:\n%s", strings.Join(g.console, "\n"))
			g.mu.Unlock()
		}
	})
	return g
}

// wait returns the guest's next report starting with prefix (GUEST-X),
// failing on GUEST-ERROR or after timeout.
func (g *guest) wait(t *testing.T, prefix string, timeout time.Duration) string {
	t.Helper()
	deadline := time.After(timeout)
	for {
		select {
		case line, ok := <-g.lines:
			if !ok {
				t.Fatalf("QEMU exited before the guest reported %s", prefix)
			}
			t.Logf("guest: %s", line)
			if strings.HasPrefix(line, "GUEST-ERROR") {
				t.Fatalf("the guest failed: %s", line)
			}
			if strings.HasPrefix(line, prefix) {
				return strings.TrimSpace(strings.TrimPrefix(line, prefix))
			}
		case <-deadline:
			t.Fatalf("the guest did not report %s within %s", prefix, timeout)
		}
	}
}

// guestKernel fetches the guest's kernel and modules (cached) and returns
// their directory.
func guestKernel(t *testing.T) string {
	t.Helper()
	cmd := exec.Command("bash", filepath.Join(repoRoot, "hack/local-cloud/build-guest.sh"))
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("build-guest.sh: %v", err)
	}
	return strings.TrimSpace(string(out))
}

// guestInitrd builds the guest's initramfs: test/e2e/guest as /init (a
// static binary), the modules, cfg and a console.
func guestInitrd(t *testing.T, kernel string, cfg guestconfig.Config) string {
	t.Helper()
	dir := t.TempDir()
	root := filepath.Join(dir, "root")
	for _, d := range []string{"modules", "dev", "proc", "sys", "run"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	build := exec.Command("go", "build", "-trimpath", "-ldflags=-s -w", "-o", filepath.Join(root, "init"), "./test/e2e/guest")
	build.Dir, build.Env = repoRoot, append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH=amd64")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build the guest's init: %v: %s", err, out)
	}
	for _, m := range cfg.Modules {
		if err := os.WriteFile(filepath.Join(root, "modules", m+".ko"), []byte(readFile(t, filepath.Join(kernel, "modules", m+".ko"))), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	raw, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, guestconfig.Path), raw, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mknod(filepath.Join(root, "dev/console"), unix.S_IFCHR|0o600, int(unix.Mkdev(5, 1))); err != nil {
		t.Fatalf("mknod console: %v", err)
	}
	initrd := filepath.Join(dir, "initrd")
	pack := exec.Command("sh", "-c", fmt.Sprintf("cd %s && find . | busybox cpio -o -H newc > %s", root, initrd))
	if out, err := pack.CombinedOutput(); err != nil {
		t.Fatalf("cpio: %v: %s", err, out)
	}
	return initrd
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
