//go:build e2e

package vms

import (
	"fmt"
	"io"
	"net"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/containernetworking/plugins/pkg/ns"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kuryr-k8s/kuryr/test/e2e/framework"
)

func kuryrKey(ns, name string) types.NamespacedName {
	return types.NamespacedName{Namespace: ns, Name: name}
}

// askHTTP sends GET / from the VM and returns the answer's last line (the
// backend's name), "" when nothing answered.
func askHTTP(vm *framework.VM, addr string) string {
	var out string
	_ = vm.Netns.Do(func(ns.NetNS) error {
		c, err := net.DialTimeout("tcp", addr, 2*time.Second)
		if err != nil {
			return err
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(3 * time.Second))
		if _, err := c.Write([]byte("GET / HTTP/1.0\r\n\r\n")); err != nil {
			return err
		}
		raw, _ := io.ReadAll(c)
		lines := strings.Split(strings.TrimSpace(string(raw)), "\n")
		out = strings.TrimSpace(lines[len(lines)-1])
		return nil
	})
	return out
}

// askUDP sends a datagram from the VM (a new source port each time) and
// returns the answer, "" when nothing answered.
func askUDP(vm *framework.VM, addr string) string {
	var out string
	_ = vm.Netns.Do(func(ns.NetNS) error {
		c, err := net.Dial("udp", addr)
		if err != nil {
			return err
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(2 * time.Second))
		if _, err := c.Write([]byte("ping")); err != nil {
			return err
		}
		buf := make([]byte, 256)
		n, err := c.Read(buf)
		out = strings.TrimSpace(string(buf[:n]))
		return err
	})
	return out
}

// eventuallyAnswers waits until addr answers the VM with want.
func eventuallyAnswers(t *testing.T, vm *framework.VM, addr, want string) {
	t.Helper()
	framework.Eventually(t, time.Minute, time.Second, fmt.Sprintf("vm-%s reaches %s (%s)", vm.Name, addr, want), func() (bool, error) {
		got := askHTTP(vm, addr)
		return got == want, fmt.Errorf("answered %q", got)
	})
}

// reachesAll waits until asking (a new connection each time) reaches
// exactly the pods named.
func reachesAll(t *testing.T, vm *framework.VM, ask func() string, want []string) {
	t.Helper()
	framework.Eventually(t, time.Minute, time.Second, fmt.Sprintf("vm-%s reaches %v", vm.Name, want), func() (bool, error) {
		seen := map[string]bool{}
		for range 8*len(want) + 8 {
			if a := ask(); strings.HasPrefix(a, "web-") {
				seen[a] = true
			}
		}
		var got []string
		for s := range seen {
			got = append(got, s)
		}
		sort.Strings(got)
		return strings.Join(got, ",") == strings.Join(want, ","), fmt.Errorf("reached %v", got)
	})
}

// subnetOf is the VM's subnet, as a CIDR.
func subnetOf(t *testing.T, vm *framework.VM) string {
	t.Helper()
	var cidr string
	err := vm.Netns.Do(func(ns.NetNS) error {
		ifc, err := net.InterfaceByName("eth0")
		if err != nil {
			return err
		}
		addrs, err := ifc.Addrs()
		if err != nil {
			return err
		}
		for _, a := range addrs {
			if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil {
				cidr = (&net.IPNet{IP: n.IP.Mask(n.Mask), Mask: n.Mask}).String()
			}
		}
		return nil
	})
	if err != nil || cidr == "" {
		t.Fatalf("the VM's subnet: %v", err)
	}
	return cidr
}
