// Command kuryr-bench measures kuryr on the local cloud and prints figures
// (it asserts nothing; targets are printed next to the results).
//
//	kuryr-bench ports [-pods 50]   pod burst -> Neutron port -> KuryrPort status
//	kuryr-bench pods  [-pods 50] [-timeline]   Deployment -> all pods Running, CNI ADD by stage
//	kuryr-bench scale [-pods 1000] [-subnet ID]   Deployment on simulated nodes (hack/bench-scale.sh) -> all KuryrPorts with port data
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
	"errors"
	"flag"
	"fmt"
	"os"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kuryr-k8s/kuryr/test/e2e/framework"
)

// env is the local cloud as the benchmarks see it: the framework's Cloud,
// a kuryr client with watches, the cluster's name and the cloud's control
// script (kuryr-ctl.sh).
type env struct {
	*framework.Cloud
	kuryr   client.WithWatch
	cluster string
	ctl     string
}

// connect loads the cloud with the framework's loader; the clients may
// make 200 requests a second (bursts of 400), Neutron and Octavia 5
// minutes each.
func connect() (*env, error) {
	c, err := framework.Load(framework.Options{KubeQPS: 200, KubeBurst: 400, OpenStackTimeout: 5 * time.Minute})
	if err != nil {
		return nil, err
	}
	e := &env{Cloud: c}
	if e.cluster, err = framework.Getenv("KURYR_CLUSTER"); err != nil {
		return nil, err
	}
	if e.ctl, err = framework.Getenv("KURYR_CTL"); err != nil {
		return nil, err
	}
	e.kuryr, err = c.KuryrClient(200, 400)
	return e, err
}

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: kuryr-bench ports|pods|scale [-pods N] | vmpods [-pods N] [-node NODE] [-mode M] [-pool-wait N] | services [-services N] [-backends N] |\n"+
			"       policy [-pods N] [-namespaces N] [-policies N] [-samples N] [-direct N]")
		os.Exit(2)
	}
	fs := flag.NewFlagSet(os.Args[1], flag.ExitOnError)
	pods := fs.Int("pods", 50, "pods in the burst (policy: pods in all, default 200)")
	services := fs.Int("services", 20, "services: Services created at once")
	yardstick := fs.Bool("yardstick", true, "scale: measure Neutron's own time first (false: kuryr alone, for a quicker look)")
	subnet := fs.String("subnet", "", "scale: the pods' subnet (the controller's pod_subnet for the run)")
	backends := fs.Int("backends", 3, "services: backend pods (endpoints of every Service)")
	var policy policySizes
	fs.IntVar(&policy.namespaces, "namespaces", 10, "policy: namespaces the pods and policies are spread over")
	fs.IntVar(&policy.policies, "policies", 50, "policy: NetworkPolicies standing during the measurements")
	fs.IntVar(&policy.samples, "samples", 20, "policy: timed policy changes, and as many pod label changes")
	fs.IntVar(&policy.direct, "direct", 10, "policy: timed direct Neutron changes of each yardstick (0: none)")
	var vm vmRun
	fs.StringVar(&vm.node, "node", "", "vmpods: the VM node (default: the cloud's first, KURYR_CLOUD_VM_NODES)")
	fs.StringVar(&vm.relabel, "mode", "", "vmpods: the mode the VM node is labelled with for the run (nested-vlan, nested-macvlan)")
	fs.IntVar(&vm.poolWait, "pool-wait", 0, "vmpods: wait until the VM node's pool holds this many ports")
	fs.BoolVar(&timeline, "timeline", false, "pods: print, each second, how many pods have port data, a sandbox and run")
	_ = fs.Parse(os.Args[2:])
	policy.pods = 200
	fs.Visit(func(f *flag.Flag) {
		if f.Name == "pods" {
			policy.pods = *pods
		}
	})
	e, err := connect()
	if unset := (framework.UnsetError{}); errors.As(err, &unset) {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
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
	case "scale":
		err = benchScale(ctx, e, *pods, *subnet, *yardstick)
	case "vmpods":
		err = benchVMPods(ctx, e, *pods, vm)
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
