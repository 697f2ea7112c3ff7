package check

import (
	"context"
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kuryr-k8s/kuryr/pkg/cli/env"
)

// unservedNodes says, for each of nodes whose kuryr-daemon pod is missing
// or not Ready, what its pod is doing: pods there get no network, and a
// probe pod there would only wait out the timeout. Empty when every node
// is served or the daemons cannot be listed (the steps then show it).
func unservedNodes(ctx context.Context, e *env.Env, nodes []string) []string {
	pods, err := env.DaemonPods(ctx, e.Client, e.KuryrNamespace)
	if err != nil {
		return nil
	}
	return unserved(pods, nodes)
}

// unserved is unservedNodes over listed daemon pods. Pure.
func unserved(pods []corev1.Pod, nodes []string) []string {
	byNode := map[string]*corev1.Pod{}
	for i := range pods {
		p := &pods[i]
		// A Ready one, if the node has several (an old pod Failed, a
		// rollout under way).
		if q := byNode[p.Spec.NodeName]; p.DeletionTimestamp == nil && (q == nil || !podReady(q)) {
			byNode[p.Spec.NodeName] = p
		}
	}
	var out []string
	seen := map[string]bool{}
	for _, n := range nodes {
		if seen[n] {
			continue
		}
		seen[n] = true
		p := byNode[n]
		switch {
		case p == nil:
			out = append(out, fmt.Sprintf("no kuryr-daemon pod on %s", n))
		case !podReady(p):
			out = append(out, fmt.Sprintf("kuryr-daemon on %s (%s/%s) is not Ready%s", n, p.Namespace, p.Name, containerState(p)))
		}
	}
	return out
}

// containerState: why a pod's containers are not running, if they say.
func containerState(p *corev1.Pod) string {
	var s []string
	for _, cs := range p.Status.ContainerStatuses {
		switch {
		case cs.State.Waiting != nil:
			s = append(s, cs.State.Waiting.Reason)
		case cs.State.Terminated != nil:
			s = append(s, "terminated: "+cs.State.Terminated.Reason)
		case cs.State.Running != nil:
			s = append(s, "running, failing its readiness probe")
		}
		if cs.RestartCount > 0 {
			s = append(s, fmt.Sprintf("%d restarts", cs.RestartCount))
		}
	}
	if len(s) == 0 {
		return ""
	}
	return " (" + strings.Join(s, ", ") + ")"
}

// lastWarnings: the newest Warning Event of each pod that is not Ready
// (the runtime's "failed to create pod sandbox: ... kuryr ..." says what
// the CNI answered).
func lastWarnings(ctx context.Context, c client.Reader, pods []*corev1.Pod) []string {
	var out []string
	for _, p := range pods {
		if podReady(p) {
			continue
		}
		var evs corev1.EventList
		if err := c.List(ctx, &evs, client.InNamespace(p.Namespace)); err != nil {
			continue
		}
		var mine []corev1.Event
		for _, ev := range evs.Items {
			if ev.InvolvedObject.Name == p.Name && ev.Type == corev1.EventTypeWarning {
				mine = append(mine, ev)
			}
		}
		if len(mine) == 0 {
			continue
		}
		sort.Slice(mine, func(i, j int) bool { return mine[i].LastTimestamp.Before(&mine[j].LastTimestamp) })
		ev := mine[len(mine)-1]
		out = append(out, fmt.Sprintf("%s: %s %s", p.Name, ev.Reason, ev.Message))
	}
	return out
}
