package framework

// Reaching kuryr where it runs on the local cloud: on the host network of
// nodes that are network namespaces of one machine. Its health, metrics and
// the endpoints the tests give it (fault proxies) live on each node's
// loopback, not the root namespace's. Used by the e2e tests and the
// benchmarks (test/bench), which run as root in the root namespace; no
// testing.TB, no build tag.

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/containernetworking/plugins/pkg/ns"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kuryr-k8s/kuryr/pkg/config"
	"github.com/kuryr-k8s/kuryr/pkg/names"
)

// Namespace and names of kuryr's workloads (deploy/helm/kuryr).
const (
	KuryrNamespace = "kube-system"
	Lease          = names.Lease
	// ControllerMetricsPort and DaemonMetricsPort are on each node's loopback.
	ControllerMetricsPort = 9654
	DaemonMetricsPort     = 9655
)

// Netns is the path of a node's network namespace.
func Netns(node string) string {
	return filepath.Join("/run/netns", os.Getenv("KURYR_CLOUD_NETNS_PREFIX")+node)
}

// Transport dials from inside a node's network namespace (opened for each
// connection).
func Transport(node string) *http.Transport {
	return &http.Transport{DialContext: func(ctx context.Context, network, addr string) (conn net.Conn, err error) {
		err = in(node, func() error {
			conn, err = dial(ctx, network, addr)
			return err
		})
		return conn, err
	}}
}

// DialIn dials from inside the network namespace n, already open.
func DialIn(n ns.NetNS) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (conn net.Conn, err error) {
		err = n.Do(func(ns.NetNS) error {
			conn, err = dial(ctx, network, addr)
			return err
		})
		return conn, err
	}
}

// dial: a socket belongs to the namespace it is created in.
func dial(ctx context.Context, network, addr string) (net.Conn, error) {
	return (&net.Dialer{}).DialContext(ctx, network, addr)
}

// Listen listens on addr inside a node's network namespace.
func Listen(node, addr string) (ln net.Listener, err error) {
	err = in(node, func() error {
		ln, err = net.Listen("tcp", addr)
		return err
	})
	return ln, err
}

func in(node string, f func() error) error {
	target, err := ns.GetNS(Netns(node))
	if err != nil {
		return fmt.Errorf("netns of %s: %w", node, err)
	}
	defer target.Close()
	return target.Do(func(ns.NetNS) error { return f() })
}

// Leader is the controller pod holding the controller_ha Lease, and its
// node.
func Leader(ctx context.Context, cs kubernetes.Interface) (pod, node string, err error) {
	l, err := cs.CoordinationV1().Leases(KuryrNamespace).Get(ctx, Lease, metav1.GetOptions{})
	if err != nil {
		return "", "", fmt.Errorf("lease %s: %w", Lease, err)
	}
	if l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity == "" {
		return "", "", fmt.Errorf("lease %s has no holder", Lease)
	}
	id := config.LeaseHolder(*l.Spec.HolderIdentity)
	p, err := cs.CoreV1().Pods(KuryrNamespace).Get(ctx, id, metav1.GetOptions{})
	if err != nil {
		return "", "", fmt.Errorf("leader pod %s: %w", id, err)
	}
	return p.Name, p.Spec.NodeName, nil
}

// Scrape reads a Prometheus endpoint on a node's loopback as a
// Prometheus with the cloud's admin token does: over HTTPS (kuryr's
// self-signed certificate, not verified), with the token kuryr has the
// API server authenticate and authorize ([prometheus_exporter] auth).
func Scrape(node string, port int) (map[string]*dto.MetricFamily, error) {
	tr := Transport(node)
	tr.TLSClientConfig = &tls.Config{InsecureSkipVerify: true} // a self-signed certificate, made at start
	c := &http.Client{Timeout: 10 * time.Second, Transport: tr}
	req, err := http.NewRequest(http.MethodGet, fmt.Sprintf("https://127.0.0.1:%d/metrics", port), nil)
	if err != nil {
		return nil, err
	}
	token, err := adminToken()
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := c.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("metrics on %s:%d: HTTP %d", node, port, resp.StatusCode)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	return p.TextToMetricFamilies(resp.Body)
}

// adminToken is the bearer token of the cloud's admin kubeconfig
// ($KUBECONFIG).
func adminToken() (string, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", os.Getenv("KUBECONFIG"))
	if err != nil {
		return "", fmt.Errorf("admin kubeconfig: %w", err)
	}
	if cfg.BearerToken == "" {
		return "", fmt.Errorf("admin kubeconfig %s has no token to read kuryr's metrics with", os.Getenv("KUBECONFIG"))
	}
	return cfg.BearerToken, nil
}

// ControllerMetrics reads the active controller's metrics.
func ControllerMetrics(ctx context.Context, cs kubernetes.Interface) (map[string]*dto.MetricFamily, error) {
	_, node, err := Leader(ctx, cs)
	if err != nil {
		return nil, err
	}
	return Scrape(node, ControllerMetricsPort)
}

// podNetnsDir holds containerd's cni-* namespaces of the pods.
const podNetnsDir = "/run/netns"

// PodNetns opens the network namespace of the pod with address ip: the
// cni-* namespace holding it.
func PodNetns(ip string) (ns.NetNS, error) {
	entries, err := os.ReadDir(podNetnsDir)
	if err != nil {
		return nil, err
	}
	for _, ent := range entries {
		if !strings.HasPrefix(ent.Name(), "cni-") {
			continue
		}
		n, err := ns.GetNS(filepath.Join(podNetnsDir, ent.Name()))
		if err != nil {
			continue // gone meanwhile
		}
		if holds(n, ip) {
			return n, nil
		}
		n.Close()
	}
	return nil, fmt.Errorf("no network namespace in %s holds %s", podNetnsDir, ip)
}

func holds(n ns.NetNS, ip string) bool {
	var addrs []net.Addr
	_ = n.Do(func(ns.NetNS) (err error) {
		addrs, err = net.InterfaceAddrs()
		return err
	})
	return slices.ContainsFunc(addrs, func(a net.Addr) bool {
		ipn, ok := a.(*net.IPNet)
		return ok && ipn.IP.String() == ip
	})
}
