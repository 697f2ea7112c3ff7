//go:build e2e

// Package framework connects end-to-end tests to the local cloud that
// `make up` started (hack/local-cloud), as described by the environment file
// it writes (_output/local-cloud.env).
package framework

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kuryr-k8s/kuryr/pkg/openstack"
)

// Cloud is the local cloud as the tests see it.
type Cloud struct {
	Kube      kubernetes.Interface
	OS        *openstack.Clients
	ProjectID string
	Nodes     []string
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
}

func mustEnv(t testing.TB, name string) string {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		t.Fatalf("%s is not set: source _output/local-cloud.env (written by `make up`)", name)
	}
	return v
}

// Connect reads the local cloud's environment and builds its clients.
func Connect(t testing.TB) *Cloud {
	t.Helper()
	c := &Cloud{
		ProjectID:     mustEnv(t, "KURYR_CLOUD_PROJECT"),
		Nodes:         strings.Fields(mustEnv(t, "KURYR_CLOUD_NODES")),
		NodeOVSDB:     map[string]string{},
		NetnsPrefix:   mustEnv(t, "KURYR_CLOUD_NETNS_PREFIX"),
		OutsideNetns:  mustEnv(t, "KURYR_CLOUD_OUTSIDE_NS"),
		PodNet:        mustEnv(t, "KURYR_CLOUD_POD_NET"),
		PodSubnet:     mustEnv(t, "KURYR_CLOUD_POD_SUBNET"),
		ServiceSubnet: mustEnv(t, "KURYR_CLOUD_SERVICE_SUBNET"),
		PublicNet:     mustEnv(t, "KURYR_CLOUD_PUBLIC_NET"),
		PodSG:         mustEnv(t, "KURYR_CLOUD_POD_SG"),
		TestImage:     mustEnv(t, "TEST_IMAGE"),
		VMNet:         mustEnv(t, "KURYR_CLOUD_VM_NET"),
	}
	for _, kv := range strings.Split(mustEnv(t, "KURYR_CLOUD_NODE_OVSDB"), ",") {
		name, db, ok := strings.Cut(kv, "=")
		if !ok {
			t.Fatalf("KURYR_CLOUD_NODE_OVSDB: malformed entry %q", kv)
		}
		c.NodeOVSDB[name] = db
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", mustEnv(t, "KUBECONFIG"))
	if err != nil {
		t.Fatalf("kubeconfig: %v", err)
	}
	if c.Kube, err = kubernetes.NewForConfig(cfg); err != nil {
		t.Fatalf("kubernetes client: %v", err)
	}
	c.OS, err = openstack.NewNoAuthClients(openstack.Endpoints{
		Network:      mustEnv(t, "NEUTRON_URL"),
		LoadBalancer: mustEnv(t, "OCTAVIA_URL"),
	}, 60*time.Second)
	if err != nil {
		t.Fatalf("openstack clients: %v", err)
	}
	return c
}

// NodeNetns is the network namespace a node lives in.
func (c *Cloud) NodeNetns(node string) string { return c.NetnsPrefix + node }

// Eventually polls cond every interval until it returns true, failing the
// test with the last error after timeout.
func Eventually(t testing.TB, timeout, interval time.Duration, what string, cond func() (bool, error)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var lastErr error
	for {
		ok, err := cond()
		if ok {
			return
		}
		lastErr = err
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s (last error: %v)", timeout, what, lastErr)
		}
		time.Sleep(interval)
	}
}

// Name returns a unique, DNS-safe name for a test resource.
func Name(prefix string) string {
	return fmt.Sprintf("%s-%d", prefix, time.Now().UnixNano()%1_000_000_000)
}
