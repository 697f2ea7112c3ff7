package nodeport

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/log"
)

// Watch hands the agent the annotations of the Node objects in c (the
// daemon's cache holds only its own node).
func Watch(ctx context.Context, c cache.Cache, a *Agent) error {
	inf, err := c.GetInformer(ctx, &corev1.Node{})
	if err != nil {
		return fmt.Errorf("node informer: %w", err)
	}
	logger := log.FromContext(ctx).WithName("node-port")
	set := func(o any) {
		if n, ok := o.(*corev1.Node); ok {
			a.SetAnnotations(logger, n.Annotations)
		}
	}
	_, err = inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    set,
		UpdateFunc: func(_, o any) { set(o) },
		DeleteFunc: func(any) { a.set(nil) },
	})
	return err
}
