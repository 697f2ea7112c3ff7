// Command kuryr-bench measures kuryr on the local cloud and prints figures
// (it asserts nothing; targets are printed next to the results).
//
//	kuryr-bench ports [-pods 50]   pod burst -> Neutron port -> KuryrPort status
//	kuryr-bench pods  [-pods 50] [-timeline]   Deployment -> all pods Running, CNI ADD by stage
//	kuryr-bench services [-services 20] [-backends 3]   Services -> VIPs answer (Octavia as yardstick), endpoint change, restart, clean-up
//	kuryr-bench policy [-pods 200] [-namespaces 10] [-policies 50] [-samples 20] [-direct 10]
//	                   NetworkPolicy and pod label changes -> probe flips (direct Neutron changes as yardstick), Neutron rules and peer memberships
//
// It reads the environment `make up` writes (_output/local-cloud.env). It
// lives beside the end-to-end tests (test/bench) and `make build` builds it
// as bin/kuryr-bench, which hack/bench.sh runs; it is not shipped.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	kuryrv1 "github.com/kuryr-k8s/kuryr/api/v1"
	"github.com/kuryr-k8s/kuryr/pkg/openstack"
)

// env is the local cloud as the benchmarks see it.
type env struct {
	kube      kubernetes.Interface
	kuryr     client.WithWatch
	os        *openstack.Clients
	nodes     []string
	project   string
	podNet    string
	podSubnet string
	podSG     string
	image     string
	cluster   string
}

func getenv(name string) string {
	v := os.Getenv(name)
	if v == "" {
		fmt.Fprintf(os.Stderr, "%s is not set: source _output/local-cloud.env (written by make up)\n", name)
		os.Exit(2)
	}
	return v
}

func connect() (*env, error) {
	ctrllog.SetLogger(logr.Discard())
	cfg, err := clientcmd.BuildConfigFromFlags("", getenv("KUBECONFIG"))
	if err != nil {
		return nil, err
	}
	cfg.QPS, cfg.Burst = 200, 400
	e := &env{
		nodes: strings.Fields(getenv("KURYR_CLOUD_NODES")), project: getenv("KURYR_CLOUD_PROJECT"),
		podNet: getenv("KURYR_CLOUD_POD_NET"), podSubnet: getenv("KURYR_CLOUD_POD_SUBNET"), podSG: getenv("KURYR_CLOUD_POD_SG"),
		image: getenv("TEST_IMAGE"), cluster: getenv("KURYR_CLUSTER"),
	}
	if e.kube, err = kubernetes.NewForConfig(cfg); err != nil {
		return nil, err
	}
	s := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(s)
	_ = kuryrv1.AddToScheme(s)
	if e.kuryr, err = client.NewWithWatch(cfg, client.Options{Scheme: s}); err != nil {
		return nil, err
	}
	e.os, err = openstack.NewNoAuthClients(openstack.Endpoints{Network: getenv("NEUTRON_URL"), LoadBalancer: os.Getenv("OCTAVIA_URL")}, 5*time.Minute)
	return e, err
}

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: kuryr-bench ports|pods [-pods N] | services [-services N] [-backends N] |\n"+
			"       policy [-pods N] [-namespaces N] [-policies N] [-samples N] [-direct N]")
		os.Exit(2)
	}
	fs := flag.NewFlagSet(os.Args[1], flag.ExitOnError)
	pods := fs.Int("pods", 50, "pods in the burst (policy: pods in all, default 200)")
	services := fs.Int("services", 20, "services: Services created at once")
	backends := fs.Int("backends", 3, "services: backend pods (endpoints of every Service)")
	var policy policySizes
	fs.IntVar(&policy.namespaces, "namespaces", 10, "policy: namespaces the pods and policies are spread over")
	fs.IntVar(&policy.policies, "policies", 50, "policy: NetworkPolicies standing during the measurements")
	fs.IntVar(&policy.samples, "samples", 20, "policy: timed policy changes, and as many pod label changes")
	fs.IntVar(&policy.direct, "direct", 10, "policy: timed direct Neutron changes of each yardstick (0: none)")
	fs.BoolVar(&timeline, "timeline", false, "pods: print, each second, how many pods have port data, a sandbox and run")
	_ = fs.Parse(os.Args[2:])
	policy.pods = 200
	fs.Visit(func(f *flag.Flag) {
		if f.Name == "pods" {
			policy.pods = *pods
		}
	})
	e, err := connect()
	if err != nil {
		fmt.Fprintln(os.Stderr, "connect:", err)
		os.Exit(1)
	}
	ctx := context.Background()
	switch os.Args[1] {
	case "ports":
		err = benchPorts(ctx, e, *pods)
	case "pods":
		err = benchPods(ctx, e, *pods)
	case "services":
		err = benchServices(ctx, e, *services, *backends)
	case "policy":
		err = benchPolicy(ctx, e, policy)
	default:
		err = fmt.Errorf("unknown benchmark %q", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "kuryr-bench:", err)
		os.Exit(1)
	}
}
