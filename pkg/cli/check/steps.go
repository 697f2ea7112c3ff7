package check

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kuryr-k8s/kuryr/pkg/cli/doctor"
)

func ok(check, format string, a ...any) doctor.Finding {
	return doctor.Findingf(check, doctor.OK, format, a...)
}
func warn(check, format string, a ...any) doctor.Finding {
	return doctor.Findingf(check, doctor.Warn, format, a...)
}
func fail(check, format string, a ...any) doctor.Finding {
	return doctor.Findingf(check, doctor.Fail, format, a...)
}

// startPods creates the two probe pods and waits until both are Ready:
// their kubelets' TCP probes reach them (node → pod).
func startPods(ctx context.Context, r *run) (doctor.Finding, bool) {
	const c = "node → pod"
	for i, role := range []string{"a", "b"} {
		p := probePod(r.ns, "probe-"+role, role, r.nodes[i], r.o.Image)
		if err := r.e.Client.Create(ctx, p); err != nil {
			return fail(c, "create pod %s: %v", p.Name, err), false
		}
		r.pods = append(r.pods, p)
	}
	start := time.Now()
	err := poll(ctx, r.o.Timeout, time.Second, func() (bool, error) {
		for _, p := range r.pods {
			if err := r.e.Client.Get(ctx, client.ObjectKeyFromObject(p), p); err != nil {
				return false, err
			}
			if !podReady(p) {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		why := append(unservedNodes(ctx, r.e, r.nodes), lastWarnings(ctx, r.e.Client, r.pods)...)
		return fail(c, "probe pods not Ready after %s (%v): %s%s; see kubectl kuryr describe pod/NAME -n %s",
			time.Since(start).Round(time.Second), err, podStates(r.pods), because(why), r.ns), false
	}
	return ok(c, "%s Ready in %s: their kubelets' probes reach them", podStates(r.pods), time.Since(start).Round(time.Second)), true
}

// podToPod: each pod fetches the other's page.
func podToPod(ctx context.Context, r *run) (doctor.Finding, bool) {
	const c = "pod ↔ pod"
	a, b := r.pods[0], r.pods[1]
	var got []string
	for _, pair := range [][2]*corev1.Pod{{a, b}, {b, a}} {
		from, to := pair[0], pair[1]
		if err := answers(ctx, r, from, to.Status.PodIP, port, []string{to.Name}, 10*time.Second); err != nil {
			return fail(c, "%s (%s) → %s (%s, %s): %v", from.Name, from.Spec.NodeName, to.Name, to.Status.PodIP,
				to.Spec.NodeName, err), true
		}
		got = append(got, fmt.Sprintf("%s → %s", from.Name, to.Name))
	}
	return ok(c, "%s, across %s and %s", strings.Join(got, ", "), a.Spec.NodeName, b.Spec.NodeName), true
}

// podToService: a ClusterIP Service over both pods answers pod a (kuryr
// makes it a load balancer: this waits for it).
func podToService(ctx context.Context, r *run) (doctor.Finding, bool) {
	const c = "pod → Service"
	s := probeService(r.ns)
	if err := r.e.Client.Create(ctx, s); err != nil {
		return fail(c, "create Service: %v", err), true
	}
	r.service = s
	start := time.Now()
	names := []string{r.pods[0].Name, r.pods[1].Name}
	if err := answers(ctx, r, r.pods[0], s.Spec.ClusterIP, 80, names, r.o.Timeout); err != nil {
		return fail(c, "%s → ClusterIP %s:80: %v (kubectl kuryr describe svc/%s -n %s)", r.pods[0].Name, s.Spec.ClusterIP,
			err, s.Name, r.ns), true
	}
	return ok(c, "%s → ClusterIP %s:80 answered %s after the Service's creation", r.pods[0].Name, s.Spec.ClusterIP,
		time.Since(start).Round(time.Second)), true
}

// dns: pod a resolves the Service's name through the cluster DNS (the
// first search domain of its resolv.conf is <namespace>.svc.<domain>).
func dns(ctx context.Context, r *run) (doctor.Finding, bool) {
	const c = "DNS"
	if r.service == nil {
		return warn(c, "not checked: no Service"), true
	}
	cmd := []string{"sh", "-c", `d=$(sed -n 's/^search \([^ ]*\).*/\1/p' /etc/resolv.conf); nslookup ` + serviceName + `.$d`}
	var out string
	err := poll(ctx, r.o.Timeout, 2*time.Second, func() (bool, error) {
		b, err := r.e.Exec.Exec(ctx, r.ns, r.pods[0].Name, "", cmd)
		out = string(b)
		return err == nil && resolvedTo(out, r.service.Spec.ClusterIP), nil
	})
	if err != nil {
		return fail(c, "%s could not resolve %s to %s: %q", r.pods[0].Name, serviceName, r.service.Spec.ClusterIP,
			strings.TrimSpace(out)), true
	}
	return ok(c, "%s resolves %s.%s.svc to %s", r.pods[0].Name, serviceName, r.ns, r.service.Spec.ClusterIP), true
}

// resolvedTo says whether nslookup's output gives ip as the name's
// address (not the server's "Address: ip:53"). Pure.
func resolvedTo(out, ip string) bool {
	for _, l := range strings.Split(out, "\n") {
		if a, ok := strings.CutPrefix(strings.TrimSpace(l), "Address:"); ok && strings.TrimSpace(a) == ip {
			return true
		}
	}
	return false
}

// because: "; " and the reasons, if any.
func because(why []string) string {
	if len(why) == 0 {
		return ""
	}
	return "; " + strings.Join(why, "; ")
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// podStates: each pod's name, node, address and phase.
func podStates(pods []*corev1.Pod) string {
	var out []string
	for _, p := range pods {
		s := fmt.Sprintf("%s on %s", p.Name, p.Spec.NodeName)
		if p.Status.PodIP != "" {
			s += " (" + p.Status.PodIP + ")"
		}
		if !podReady(p) {
			s += " " + string(p.Status.Phase)
			for _, cs := range p.Status.ContainerStatuses {
				if w := cs.State.Waiting; w != nil {
					s += " (" + w.Reason + ": " + w.Message + ")"
				}
			}
		}
		out = append(out, s)
	}
	return strings.Join(out, ", ")
}
