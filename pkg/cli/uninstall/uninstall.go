// Package uninstall is `kubectl kuryr uninstall`: it removes what kuryr
// made, in OpenStack and in Kubernetes, and nothing else, so that the
// chart (or the manifests) can then be deleted without leaving KuryrPorts
// hanging on their finalizers or Neutron and Octavia objects behind. In
// order: the controller is scaled to 0 (nothing recreates what follows is
// deleted); kuryr's objects (KuryrPorts, KuryrNetworks,
// KuryrLoadBalancers, KuryrNetworkPolicies) are deleted, their finalizers
// removed; kuryr's annotations are taken off the Nodes; then the
// controller's own sweep runs against an empty cluster, so that every
// object tagged with the cluster (ports and subports, networks and their
// router interfaces, load balancers, floating IPs, security groups,
// address groups, VM ports' address pairs) is an orphan, young ones too
// (no controller is creating anything), pass after pass until none is
// left (a load balancer still deleting, a group still on a port). The daemons, the workloads, the CRDs and the pods are left: pods
// keep their interfaces but lose their ports, so they are cut off.
package uninstall

import (
	"context"
	"fmt"
	"time"

	"github.com/kuryr-k8s/kuryr/pkg/cli/doctor"
	"github.com/kuryr-k8s/kuryr/pkg/cli/env"
)

// Options are uninstall's flags.
type Options struct {
	// Yes does it; otherwise what would be removed is listed only.
	Yes bool
	// Timeout bounds each step (the controller's pods gone, OpenStack
	// empty).
	Timeout time.Duration
	// Interval is the wait between sweep passes.
	Interval time.Duration
}

// Run removes kuryr's objects (with o.Yes) or says what it would remove,
// as findings.
func Run(ctx context.Context, e *env.Env, o Options) ([]doctor.Finding, error) {
	cloud, err := e.Cloud(ctx)
	if err != nil {
		// Without the configuration and credentials nothing in OpenStack
		// can be found: stop before touching Kubernetes.
		return nil, fmt.Errorf("kuryr's configuration and OpenStack credentials (read before anything is removed): %w", err)
	}
	r := &run{e: e, o: o, cloud: cloud}
	if !o.Yes {
		return r.plan(ctx)
	}
	return doctor.RunSteps(ctx, r.stopController, r.recordStep, r.deleteObjects, r.clearNodes, r.sweep)
}

type run struct {
	e     *env.Env
	o     Options
	cloud *env.Cloud
	// recordedPorts and recordedLBs are what kuryr's objects recorded,
	// read before they are deleted.
	recordedPorts, recordedLBs []string
}
