// Package framework connects end-to-end tests and the benchmarks
// (test/bench) to the local cloud that `make up` started (hack/local-cloud),
// as described by the environment file it writes (_output/local-cloud.env).
//
// The loader (Load), the waits (Poll) and reaching the nodes (cloudnet.go)
// take no testing.TB and need no build tag, for the benchmarks' main
// package; the helpers that fail a test (Setup, Connect, Eventually and the
// rest) are built with the e2e tag.
package framework

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	kuryrv1 "github.com/kuryr-k8s/kuryr/api/v1"
	"github.com/kuryr-k8s/kuryr/pkg/config"
	"github.com/kuryr-k8s/kuryr/pkg/openstack"
)

// Cloud is the local cloud as the tests and the benchmarks see it.
type Cloud struct {
	Kube      kubernetes.Interface
	OS        *openstack.Clients
	ProjectID string
	// Nodes are the hypervisor nodes (each runs the cloud's OVS and
	// ovn-controller).
	Nodes []string
	// VMNodes are the nodes that are VMs of the cloud (nested-macvlan;
	// KURYR_CLOUD_VM_NODES, kuryr-vm-1 by default), tainted VMNodeTaint.
	VMNodes []string
	// PodNodes are the nodes the tests spread their workloads (servers,
	// backends) over, as KURYR_E2E_POD_NODES says: "hypervisors" (the
	// default) is Nodes; "vms" is VMNodes then Nodes, so that a workload
	// of two or more pods has pods on a VM and on hypervisors. Clients,
	// node ports and what checks a node's OVS stay on Nodes.
	PodNodes []string
	// GuestNodes are the VM nodes that are QEMU guests (nested-vlan;
	// KURYR_CLOUD_GUEST_NODES), booted on demand (`kuryr-ctl.sh guest
	// start`).
	GuestNodes []string
	// NodeOVSDB maps a node name to its OVSDB socket ("unix:/...").
	NodeOVSDB     map[string]string
	NetnsPrefix   string
	OutsideNetns  string
	PodNet        string
	PodSubnet     string
	ServiceSubnet string
	PublicNet     string
	PodSG         string
	TestImage     string
	// VMNet is a tenant network of the cloud, on the cluster's router,
	// for VMs (see CreateVM).
	VMNet string

	kubeconfig string
}

// Options says how the clients Load builds may load the cloud.
type Options struct {
	// KubeQPS and KubeBurst limit the Kubernetes client (0: client-go's
	// defaults).
	KubeQPS   float32
	KubeBurst int
	// OpenStackTimeout bounds each Neutron and Octavia request.
	OpenStackTimeout time.Duration
}

// UnsetError says a variable of the local cloud's environment is not set.
type UnsetError struct{ Name string }

func (e UnsetError) Error() string {
	return fmt.Sprintf("%s is not set: source _output/local-cloud.env (written by `make up`)", e.Name)
}

// Getenv reads a variable of the local cloud's environment; unset or empty
// is an UnsetError.
func Getenv(name string) (string, error) {
	v := os.Getenv(name)
	if v == "" {
		return "", UnsetError{name}
	}
	return v, nil
}

// envReader reads variables until the first one unset, and remembers it.
type envReader struct{ err error }

func (r *envReader) get(name string) string {
	if r.err != nil {
		return ""
	}
	v, err := Getenv(name)
	r.err = err
	return v
}

// Load reads the local cloud's environment and builds its clients.
func Load(o Options) (*Cloud, error) {
	c, err := readEnv()
	if err != nil {
		return nil, err
	}
	cfg, err := c.kubeConfig(o.KubeQPS, o.KubeBurst)
	if err != nil {
		return nil, err
	}
	if c.Kube, err = kubernetes.NewForConfig(cfg); err != nil {
		return nil, fmt.Errorf("kubernetes client: %w", err)
	}
	if c.OS, err = openStackClients(o.OpenStackTimeout); err != nil {
		return nil, fmt.Errorf("openstack clients: %w", err)
	}
	return c, nil
}

// openStackClients: as the cloud's admin through Keystone (OS_CLOUD of
// OS_CLIENT_CONFIG_FILE, written by make up).
func openStackClients(timeout time.Duration) (*openstack.Clients, error) {
	var r envReader
	a := config.Auth{Cloud: r.get("OS_CLOUD"), CloudsFile: r.get("OS_CLIENT_CONFIG_FILE"), EndpointType: "public", Timeout: timeout}
	if r.err != nil {
		return nil, r.err
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	return openstack.NewClients(ctx, a, "")
}

// readEnv reads the cloud's description, the clients aside.
func readEnv() (*Cloud, error) {
	var r envReader
	c := &Cloud{
		ProjectID:     r.get("KURYR_CLOUD_PROJECT"),
		Nodes:         strings.Fields(r.get("KURYR_CLOUD_NODES")),
		VMNodes:       strings.Fields(os.Getenv("KURYR_CLOUD_VM_NODES")),
		GuestNodes:    strings.Fields(os.Getenv("KURYR_CLOUD_GUEST_NODES")),
		NodeOVSDB:     map[string]string{},
		NetnsPrefix:   r.get("KURYR_CLOUD_NETNS_PREFIX"),
		OutsideNetns:  r.get("KURYR_CLOUD_OUTSIDE_NS"),
		PodNet:        r.get("KURYR_CLOUD_POD_NET"),
		PodSubnet:     r.get("KURYR_CLOUD_POD_SUBNET"),
		ServiceSubnet: r.get("KURYR_CLOUD_SERVICE_SUBNET"),
		PublicNet:     r.get("KURYR_CLOUD_PUBLIC_NET"),
		PodSG:         r.get("KURYR_CLOUD_POD_SG"),
		TestImage:     r.get("TEST_IMAGE"),
		VMNet:         r.get("KURYR_CLOUD_VM_NET"),
	}
	ovsdb := r.get("KURYR_CLOUD_NODE_OVSDB")
	c.kubeconfig = r.get("KUBECONFIG")
	if r.err != nil {
		return nil, r.err
	}
	var err error
	if c.PodNodes, err = podNodes(os.Getenv("KURYR_E2E_POD_NODES"), c.Nodes, c.VMNodes); err != nil {
		return nil, err
	}
	for _, kv := range strings.Split(ovsdb, ",") {
		name, db, ok := strings.Cut(kv, "=")
		if !ok {
			return nil, fmt.Errorf("KURYR_CLOUD_NODE_OVSDB: malformed entry %q", kv)
		}
		c.NodeOVSDB[name] = db
	}
	return c, nil
}

// podNodes reads KURYR_E2E_POD_NODES (see Cloud.PodNodes).
func podNodes(mode string, nodes, vmNodes []string) ([]string, error) {
	switch mode {
	case "", "hypervisors":
		return nodes, nil
	case "vms":
		if len(vmNodes) == 0 {
			return nil, fmt.Errorf("KURYR_E2E_POD_NODES=vms: the cloud has no VM nodes (KURYR_CLOUD_VM_NODES is empty)")
		}
		return append(append([]string{}, vmNodes...), nodes...), nil
	}
	return nil, fmt.Errorf("KURYR_E2E_POD_NODES=%q: want hypervisors or vms", mode)
}

func (c *Cloud) kubeConfig(qps float32, burst int) (*rest.Config, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", c.kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("kubeconfig: %w", err)
	}
	if qps > 0 {
		cfg.QPS, cfg.Burst = qps, burst
	}
	return cfg, nil
}

// KuryrClient builds a client (with watches) that knows kuryr's CRDs,
// limited to qps requests a second (bursts of burst).
func (c *Cloud) KuryrClient(qps float32, burst int) (client.WithWatch, error) {
	ctrllog.SetLogger(logr.Discard())
	s := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(s)
	_ = kuryrv1.AddToScheme(s)
	cfg, err := c.kubeConfig(qps, burst)
	if err != nil {
		return nil, err
	}
	return client.NewWithWatch(cfg, client.Options{Scheme: s})
}

// VMNodeTaint keeps workloads off the local cloud's VM nodes unless they
// tolerate it (hack/local-cloud/components/vm-node.sh).
const VMNodeTaint = "kuryr.openstack.org/vm-node"

// NodeNetns is the network namespace a node lives in.
func (c *Cloud) NodeNetns(node string) string { return c.NetnsPrefix + node }

// Long reports the long tier (KURYR_E2E_LONG=1, docs/testing.md): the
// fault campaigns at full size, besides what CI runs in its time.
func Long() bool { return os.Getenv("KURYR_E2E_LONG") != "" }
