package env

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// LogReader reads a container's log through the API server.
type LogReader interface {
	Logs(ctx context.Context, ns, pod, container string, previous bool, since time.Duration) ([]byte, error)
}

// PodLogs reads logs as kubectl logs does.
type PodLogs struct{ Config *rest.Config }

// Logs implements LogReader: the container's log since `since` ago (all of
// it when 0), or its previous instance's.
func (p *PodLogs) Logs(ctx context.Context, ns, pod, container string, previous bool, since time.Duration) ([]byte, error) {
	cs, err := kubernetes.NewForConfig(p.Config)
	if err != nil {
		return nil, fmt.Errorf("kubernetes client: %w", err)
	}
	o := &corev1.PodLogOptions{Container: container, Previous: previous}
	if since > 0 {
		s := int64(since.Seconds())
		o.SinceSeconds = &s
	}
	b, err := cs.CoreV1().Pods(ns).GetLogs(pod, o).DoRaw(ctx)
	if err != nil {
		return nil, fmt.Errorf("logs of %s/%s %s: %w", ns, pod, container, err)
	}
	return b, nil
}
