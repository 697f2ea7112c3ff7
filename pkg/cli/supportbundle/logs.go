package supportbundle

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kuryr-k8s/kuryr/pkg/cli/env"
)

// collectLogs: every kuryr container's log since `since`, and its
// previous instance's where it restarted.
func collectLogs(ctx context.Context, e *env.Env, since time.Duration, b *bundle) {
	if e.Logs == nil {
		b.fail("logs", errNoLogs)
		return
	}
	var pods corev1.PodList
	if err := e.Client.List(ctx, &pods, client.InNamespace(e.KuryrNamespace), client.MatchingLabels{env.LabelName: "kuryr"}); err != nil {
		b.fail("logs", err)
		return
	}
	for _, p := range pods.Items {
		for _, c := range p.Spec.Containers {
			base := "logs/" + p.Name + "_" + c.Name
			if out, err := e.Logs.Logs(ctx, p.Namespace, p.Name, c.Name, false, since); err != nil {
				b.fail(base, err)
			} else {
				b.add(base+".log", out)
			}
			if restarts(&p, c.Name) == 0 {
				continue
			}
			if out, err := e.Logs.Logs(ctx, p.Namespace, p.Name, c.Name, true, since); err != nil {
				b.fail(base+".previous", err)
			} else {
				b.add(base+".previous.log", out)
			}
		}
	}
}

func restarts(p *corev1.Pod, container string) int32 {
	for _, cs := range p.Status.ContainerStatuses {
		if cs.Name == container {
			return cs.RestartCount
		}
	}
	return 0
}
