package supportbundle

import (
	"context"
	"errors"

	"github.com/kuryr-k8s/kuryr/pkg/cli/env"
	"github.com/kuryr-k8s/kuryr/pkg/names"
)

var (
	errNoLogs = errors.New("no log reader")
	errNoExec = errors.New("no exec")
)

// collectNodes: each node's attachments, as its kuryr-daemon records them
// (pods' OVS interfaces on a hypervisor node, the records of a VM node),
// through exec into the daemon (the command its container runs with).
func collectNodes(ctx context.Context, e *env.Env, b *bundle) {
	if e.Exec == nil {
		b.fail("nodes", errNoExec)
		return
	}
	pods, err := env.DaemonPods(ctx, e.Client, e.KuryrNamespace)
	if err != nil {
		b.fail("nodes", err)
		return
	}
	for i := range pods {
		p := &pods[i]
		if p.DeletionTimestamp != nil || p.Spec.NodeName == "" {
			continue
		}
		out, err := e.Exec.Exec(ctx, p.Namespace, p.Name, names.Daemon, env.AttachmentsCommand(p))
		if err != nil {
			b.fail("nodes/"+p.Spec.NodeName, err)
			continue
		}
		b.add("nodes/"+p.Spec.NodeName+"-attachments.txt", out)
	}
}
