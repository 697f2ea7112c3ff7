//go:build linux

// Command guest is /init of the QEMU guest test/e2e/nested boots to run a
// nested-vlan pod on a real 802.1Q stack: it loads its network modules,
// configures the VM's NIC as its Neutron port says, makes a pod network
// namespace and plugs the pod's VIF into it with kuryr-daemon's own code
// (a VLAN interface of the NIC with the subport's id, MAC and address),
// then has the pod GET a server and answer GETs for a while, and powers
// off. It reports on the console, one "GUEST-..." line per step.
package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"runtime"
	"strings"
	"time"

	"github.com/containernetworking/plugins/pkg/ns"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	kuryrv1 "github.com/kuryr-k8s/kuryr/api/v1"
	"github.com/kuryr-k8s/kuryr/pkg/cni/daemon"
	"github.com/kuryr-k8s/kuryr/pkg/cni/plug"
	"github.com/kuryr-k8s/kuryr/test/e2e/guest/guestconfig"
)

const podNetns = "/run/netns/pod"

func main() {
	if err := run(); err != nil {
		fmt.Printf("GUEST-ERROR %v\n", err)
	}
	fmt.Println("GUEST-DONE")
	unix.Sync()
	_ = unix.Reboot(unix.LINUX_REBOOT_CMD_POWER_OFF)
	select {}
}

func run() error {
	if err := mountAll(); err != nil {
		return err
	}
	raw, err := os.ReadFile(guestconfig.Path)
	if err != nil {
		return err
	}
	var cfg guestconfig.Config
	if err := json.Unmarshal(raw, &cfg); err != nil {
		return fmt.Errorf("%s: %w", guestconfig.Path, err)
	}
	for _, m := range cfg.Modules {
		if err := loadModule("/modules/" + m + ".ko"); err != nil {
			return fmt.Errorf("module %s: %w", m, err)
		}
	}
	nic, err := setUpNIC(cfg)
	if err != nil {
		return err
	}
	fmt.Printf("GUEST-NIC %s %s\n", nic, cfg.Address)
	if err := plugPod(cfg, nic); err != nil {
		return err
	}
	pod, err := ns.GetNS(podNetns)
	if err != nil {
		return err
	}
	if err := serve(pod, cfg.ServeReply); err != nil {
		return err
	}
	fmt.Printf("GUEST-GOT %s\n", get(pod, cfg.Get, 90*time.Second))
	fmt.Println("GUEST-SERVING")
	time.Sleep(time.Duration(cfg.Serve) * time.Second)
	return nil
}

func mountAll() error {
	for _, m := range []struct{ src, dir, fs string }{
		{"devtmpfs", "/dev", "devtmpfs"}, {"proc", "/proc", "proc"}, {"sysfs", "/sys", "sysfs"}, {"tmpfs", "/run", "tmpfs"},
	} {
		if err := os.MkdirAll(m.dir, 0o755); err != nil {
			return err
		}
		if err := unix.Mount(m.src, m.dir, m.fs, 0, ""); err != nil && !errors.Is(err, unix.EBUSY) {
			return fmt.Errorf("mount %s: %w", m.dir, err)
		}
	}
	return os.MkdirAll("/run/netns", 0o755)
}

func loadModule(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := unix.FinitModule(int(f.Fd()), "", 0); err != nil && !errors.Is(err, unix.EEXIST) {
		return err
	}
	return nil
}

// setUpNIC finds the NIC with the port's MAC (virtio probes it after the
// module loads), gives it the port's address and MTU and a default route,
// and returns its name.
func setUpNIC(cfg guestconfig.Config) (string, error) {
	addr, err := netlink.ParseAddr(cfg.Address)
	if err != nil {
		return "", err
	}
	if lo, err := netlink.LinkByName("lo"); err == nil {
		_ = netlink.LinkSetUp(lo)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		links, err := netlink.LinkList()
		if err != nil {
			return "", err
		}
		for _, l := range links {
			if strings.EqualFold(l.Attrs().HardwareAddr.String(), cfg.MAC) {
				if err := netlink.LinkSetMTU(l, cfg.MTU); err != nil {
					return "", err
				}
				if err := netlink.AddrAdd(l, addr); err != nil {
					return "", err
				}
				if err := netlink.LinkSetUp(l); err != nil {
					return "", err
				}
				gw := &netlink.Route{LinkIndex: l.Attrs().Index, Gw: net.ParseIP(cfg.Gateway)}
				return l.Attrs().Name, netlink.RouteAdd(gw)
			}
		}
		if time.Now().After(deadline) {
			return "", fmt.Errorf("no NIC with MAC %s", cfg.MAC)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// plugPod makes the pod's namespace and plugs the VIF into it as
// kuryr-daemon does on a nested-vlan node, then checks what it made.
func plugPod(cfg guestconfig.Config, nic string) error {
	if err := newNetns("pod"); err != nil {
		return err
	}
	hostIf := kuryrv1.HostIfName(cfg.VIF.PortID)
	res, err := daemon.Result(cfg.VIF, hostIf, "eth0", podNetns)
	if err != nil {
		return err
	}
	n, err := daemon.NestedOf(cfg.VIF, nic)
	if err != nil {
		return err
	}
	n.Netns, n.IfName, n.TempName, n.Result, n.TxChecksumOff = podNetns, "eth0", hostIf, res, true
	if err := (plug.Kernel{}).CreateNested(n); err != nil {
		return err
	}
	seen, err := (plug.Kernel{}).Inspect(podNetns, "eth0", nil)
	if err != nil {
		return err
	}
	fmt.Printf("GUEST-PLUGGED kind=%s vlan=%d mac=%s addrs=%v gw=%v\n", seen.Kind, seen.VLANID, seen.MAC, seen.Addrs, seen.HasGW)
	return nil
}

func newNetns(name string) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	orig, err := netns.Get()
	if err != nil {
		return err
	}
	defer orig.Close()
	h, err := netns.NewNamed(name)
	if err != nil {
		return err
	}
	h.Close()
	return netns.Set(orig)
}

// serve answers GET / on port 8080 in the pod's namespace with reply.
func serve(pod ns.NetNS, reply string) error {
	var ln net.Listener
	if err := pod.Do(func(ns.NetNS) (err error) {
		ln, err = net.Listen("tcp", ":8080")
		return err
	}); err != nil {
		return err
	}
	go func() {
		_ = http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, reply) }))
	}()
	return nil
}

// get sends GET / to addr from the pod until it is answered, and returns
// the answer's last line (or the last error).
func get(pod ns.NetNS, addr string, within time.Duration) string {
	deadline := time.Now().Add(within)
	var last string
	for time.Now().Before(deadline) {
		_ = pod.Do(func(ns.NetNS) error {
			c, err := net.DialTimeout("tcp", addr, 3*time.Second)
			if err != nil {
				last = "error: " + err.Error()
				return nil
			}
			defer c.Close()
			_ = c.SetDeadline(time.Now().Add(5 * time.Second))
			fmt.Fprint(c, "GET / HTTP/1.0\r\n\r\n")
			body, err := io.ReadAll(bufio.NewReader(c))
			lines := strings.Split(strings.TrimSpace(string(body)), "\n")
			if last = strings.TrimSpace(lines[len(lines)-1]); err != nil || last == "" {
				last = fmt.Sprintf("error: %v (%q)", err, body)
			}
			return nil
		})
		if !strings.HasPrefix(last, "error: ") {
			return last
		}
		time.Sleep(time.Second)
	}
	return last
}
