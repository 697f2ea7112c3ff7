package check

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kuryrv1 "github.com/kuryr-k8s/kuryr/api/v1"
	"github.com/kuryr-k8s/kuryr/pkg/cli/doctor"
	"github.com/kuryr-k8s/kuryr/pkg/cli/env"
	"github.com/kuryr-k8s/kuryr/pkg/controller/nested"
)

// pickNodes lists the nodes and chooses where the probe pods run; it also
// returns every node that takes ordinary pods.
func pickNodes(ctx context.Context, e *env.Env) (chosen, usable []string, f doctor.Finding, err error) {
	var nodes corev1.NodeList
	if err := e.Client.List(ctx, &nodes); err != nil {
		return nil, nil, doctor.Finding{}, fmt.Errorf("list nodes: %w", err)
	}
	chosen, f, err = choose(nodes.Items)
	return chosen, usableNodes(nodes.Items), f, err
}

// usableNodes are the Ready nodes that take ordinary pods (schedulable, no
// NoSchedule or NoExecute taint), by name. Pure.
func usableNodes(nodes []corev1.Node) []string {
	var usable []string
	for _, n := range nodes {
		if doctor.NodeReady(&n) && !n.Spec.Unschedulable && !tainted(n) {
			usable = append(usable, n.Name)
		}
	}
	slices.Sort(usable)
	return usable
}

// choose takes two of the usable nodes; one is enough, said as a warning.
// Pure.
func choose(nodes []corev1.Node) ([]string, doctor.Finding, error) {
	const c = "nodes"
	usable := usableNodes(nodes)
	switch len(usable) {
	case 0:
		return nil, doctor.Finding{}, fmt.Errorf("no Ready, schedulable node without taints for the probe pods (of %d nodes)", len(nodes))
	case 1:
		return []string{usable[0], usable[0]}, doctor.Finding{Check: c, Status: doctor.Warn,
			Message: "only " + usable[0] + " takes ordinary pods: pod ↔ pod is checked on that node only"}, nil
	}
	return usable[:2], doctor.Finding{Check: c, Status: doctor.OK,
		Message: fmt.Sprintf("probe pods on %s and %s (of %d usable nodes)", usable[0], usable[1], len(usable))}, nil
}

func tainted(n corev1.Node) bool {
	for _, t := range n.Spec.Taints {
		if t.Effect == corev1.TaintEffectNoSchedule || t.Effect == corev1.TaintEffectNoExecute {
			return true
		}
	}
	return false
}

// macvlan says whether the node is labelled nested-macvlan (no per-pod
// security groups: policies are not enforced there). A cluster whose
// default mode is nested-macvlan, unlabelled, is not recognised: its
// policy step fails, saying why that may be.
func macvlan(ctx context.Context, e *env.Env, node string) bool {
	var n corev1.Node
	if err := e.Client.Get(ctx, client.ObjectKey{Name: node}, &n); err != nil {
		return false
	}
	return n.Labels[kuryrv1.PodVIFLabel] == nested.ModeMacvlan
}
