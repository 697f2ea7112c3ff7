package svcports

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/containernetworking/plugins/pkg/ns"
	"github.com/google/nftables"
	corev1 "k8s.io/api/core/v1"
)

func tcpPort(port uint16, target string, local bool, eps ...string) NodePort {
	np := NodePort{Service: "demo/web", Protocol: corev1.ProtocolTCP, Port: port, Target: netip.MustParseAddrPort(target), Local: local}
	for _, e := range eps {
		np.Endpoints = append(np.Endpoints, netip.MustParseAddrPort(e))
	}
	return np
}

// masqueraded reports an answer from want that saw the node's address on
// the backend's side as the source.
func masqueraded(answer, want string) bool {
	return strings.HasPrefix(answer, want+" 10.77.2.1:") || strings.HasPrefix(answer, want+" [fd77:2::1]:")
}

// Real TCP and UDP traffic to the node's node ports, from another host and
// from the node itself, DNATed and masqueraded; re-applying replaces.
func TestReplaceServesNodePorts(t *testing.T) {
	needRoot(t)
	n := newTestNet(t)
	n.serve(t, []string{"10.77.96.10:80", "10.77.2.2:8080", "10.77.96.11:8080", "[fd77:96::10]:80", "[fd77:96::10]:8080"},
		[]string{"10.77.96.10:53"})
	nft := NFTables{NetNS: int(n.node.Fd())}
	if a := ask(t, n.client, "tcp", "10.77.1.1:30080"); a != "" {
		t.Fatalf("answered before any rule: %q", a)
	}
	udp := NodePort{Service: "demo/dns", Protocol: corev1.ProtocolUDP, Port: 30053, Target: netip.MustParseAddrPort("10.77.96.10:53")}
	// SCTP: programmed (the kernel here has no SCTP sockets to try it).
	sctp := NodePort{Service: "demo/sctp", Protocol: corev1.ProtocolSCTP, Port: 30009, Target: netip.MustParseAddrPort("10.77.96.10:9")}
	first := Ruleset{Ports: []NodePort{
		tcpPort(30080, "10.77.96.10:80", false), udp, sctp,
		tcpPort(30081, "10.77.96.10:80", true, "10.77.2.2:8080", "10.77.96.11:8080"),
		tcpPort(30082, "10.77.96.10:80", true),
		tcpPort(30086, "[fd77:96::10]:80", false),
		tcpPort(30087, "[fd77:96::10]:80", true, "[fd77:96::10]:8080"),
	}}
	for range 2 { // twice: the second replaces the first
		if err := nft.Replace(first); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name          string
		from          ns.NetNS
		network, addr string
		want          string // "": refused; "(timeout)": dropped
	}{
		{"tcp from another host", n.client, "tcp", "10.77.1.1:30080", "10.77.96.10:80"},
		{"tcp to the node's other address", n.client, "tcp", "10.77.2.1:30080", "10.77.96.10:80"},
		{"udp from another host", n.client, "udp", "10.77.1.1:30053", "10.77.96.10:53"},
		{"tcp from the node itself", n.node, "tcp", "10.77.1.1:30080", "10.77.96.10:80"},
		{"udp from the node itself", n.node, "udp", "10.77.2.1:30053", "10.77.96.10:53"},
		{"not on localhost", n.node, "tcp", "127.0.0.1:30080", ""},
		{"local without local endpoints: dropped", n.client, "tcp", "10.77.1.1:30082", "(timeout)"},
		{"local, from the node itself: through the ClusterIP", n.node, "tcp", "10.77.1.1:30082", "10.77.96.10:80"},
		{"another port: nothing", n.client, "tcp", "10.77.1.1:30083", ""},
		{"IPv6 from another host", n.client, "tcp", "[fd77:1::1]:30086", "[fd77:96::10]:80"},
		{"IPv6 from the node itself", n.node, "tcp", "[fd77:2::1]:30086", "[fd77:96::10]:80"},
		{"IPv6 not on localhost", n.node, "tcp", "[::1]:30086", ""},
		{"IPv6 local", n.client, "tcp", "[fd77:1::1]:30087", "[fd77:96::10]:8080"},
		{"an IPv4 node port is not served on IPv6 addresses", n.client, "tcp", "[fd77:1::1]:30080", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := ask(t, tc.from, tc.network, tc.addr)
			if strings.HasPrefix(tc.want, "(") || tc.want == "" {
				if a != tc.want {
					t.Errorf("answer %q, want %q", a, tc.want)
				}
			} else if !masqueraded(a, tc.want) {
				t.Errorf("answer %q, want %q from 10.77.2.1 (masqueraded)", a, tc.want)
			}
		})
	}
	seen := map[string]int{}
	for range 30 {
		a := ask(t, n.client, "tcp", "10.77.1.1:30081")
		if !strings.Contains(a, " 10.77.2.1:") {
			t.Fatalf("local node port: answer %q, want one from 10.77.2.1 (masqueraded)", a)
		}
		seen[strings.Fields(a)[0]]++
	}
	if len(seen) != 2 || seen["10.77.2.2:8080"] == 0 || seen["10.77.96.11:8080"] == 0 {
		t.Errorf("local node port reached %v, want both local endpoints", seen)
	}

	second := Ruleset{Ports: []NodePort{tcpPort(30090, "10.77.96.10:80", false)}}
	if err := nft.Replace(second); err != nil {
		t.Fatal(err)
	}
	if a := ask(t, n.client, "tcp", "10.77.1.1:30080"); a != "" {
		t.Errorf("a node port of the first ruleset still answers: %q", a)
	}
	if a := ask(t, n.client, "tcp", "10.77.1.1:30090"); !masqueraded(a, "10.77.96.10:80") {
		t.Errorf("the new node port answers %q", a)
	}
	if got := countRules(t, n.node); got != "output:1 postrouting:1 prerouting:1" {
		t.Errorf("rules after replacing: %s, want one per chain", got)
	}
	if err := nft.Delete(); err != nil {
		t.Fatal(err)
	}
	if err := nft.Delete(); err != nil {
		t.Fatalf("deleting a deleted table: %v", err)
	}
	if a := ask(t, n.client, "tcp", "10.77.1.1:30090"); a != "" {
		t.Errorf("answers after Delete: %q", a)
	}
}

// countRules lists the table's chains with their number of rules.
func countRules(t *testing.T, n ns.NetNS) string {
	t.Helper()
	c, err := nftables.New(nftables.WithNetNSFd(int(n.Fd())))
	if err != nil {
		t.Fatal(err)
	}
	chains, err := c.ListChainsOfTableFamily(nftables.TableFamilyINet)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, ch := range chains {
		rules, err := c.GetRules(ch.Table, ch)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, fmt.Sprintf("%s:%d", ch.Name, len(rules)))
	}
	slices.Sort(out)
	return strings.Join(out, " ")
}

// The health check servers answer 200 with a local endpoint, 503 without
// one or when the node ports are not programmed, and stop with their
// Service.
func TestHealthServers(t *testing.T) {
	needRoot(t)
	n := newTestNet(t)
	h := &HealthServers{Listen: func(port uint16) (ln net.Listener, err error) {
		err = n.node.Do(func(ns.NetNS) error {
			ln, err = net.Listen("tcp", fmt.Sprintf(":%d", port))
			return err
		})
		return ln, err
	}}
	t.Cleanup(h.Close)
	check := HealthCheck{Port: 32000, Namespace: "demo", Name: "web", LocalEndpoints: 1}
	if err := h.Sync([]HealthCheck{check}); err != nil {
		t.Fatal(err)
	}
	if code, b := get(t, n.client, "10.77.1.1:32000"); code != 200 || b.LocalEndpoints != 1 || !b.ServiceProxyHealthy ||
		b.Service.Namespace != "demo" || b.Service.Name != "web" {
		t.Errorf("with a local endpoint: %d %+v", code, b)
	}
	check.LocalEndpoints = 0
	if err := h.Sync([]HealthCheck{check}); err != nil {
		t.Fatal(err)
	}
	if code, b := get(t, n.client, "10.77.2.1:32000"); code != 503 || b.LocalEndpoints != 0 {
		t.Errorf("without a local endpoint: %d %+v", code, b)
	}
	check.LocalEndpoints = 2
	_ = h.Sync([]HealthCheck{check})
	h.SetHealthy(false)
	if code, b := get(t, n.client, "10.77.1.1:32000"); code != 503 || b.ServiceProxyHealthy {
		t.Errorf("node ports not programmed: %d %+v", code, b)
	}
	h.SetHealthy(true)
	_ = h.Sync(nil)
	if code, _ := get(t, n.client, "10.77.1.1:32000"); code != 0 {
		t.Errorf("the Service is gone, its health check port still answers %d", code)
	}
}

// get asks for / from inside n: the status code (0: no answer) and body.
func get(t *testing.T, n ns.NetNS, addr string) (int, healthBody) {
	t.Helper()
	var code int
	var b healthBody
	do(t, n, func() error {
		c, err := net.DialTimeout("tcp", addr, 500*time.Millisecond)
		if err != nil {
			return nil
		}
		defer func() { _ = c.Close() }()
		_ = c.SetDeadline(time.Now().Add(2 * time.Second))
		if _, err := fmt.Fprintf(c, "GET / HTTP/1.0\r\nHost: %s\r\n\r\n", addr); err != nil {
			return err
		}
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			return err
		}
		defer func() { _ = resp.Body.Close() }()
		code = resp.StatusCode
		return json.NewDecoder(resp.Body).Decode(&b)
	})
	return code, b
}
