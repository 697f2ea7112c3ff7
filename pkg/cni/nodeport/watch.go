package nodeport

import (
	"context"
	"fmt"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/log"
)

// Annotated is what takes a Node's annotations: an agent of the node's
// management port or of its refuse port. nil annotations: the Node is
// gone.
type Annotated interface {
	SetAnnotations(logger logr.Logger, annotations map[string]string)
}

// Watch hands the agents the annotations of the Node objects in c (the
// daemon's cache holds only its own node).
func Watch(ctx context.Context, c cache.Cache, agents ...Annotated) error {
	inf, err := c.GetInformer(ctx, &corev1.Node{})
	if err != nil {
		return fmt.Errorf("node informer: %w", err)
	}
	logger := log.FromContext(ctx).WithName("node-ports")
	set := func(annotations map[string]string) {
		for _, a := range agents {
			a.SetAnnotations(logger, annotations)
		}
	}
	_, err = inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc: func(o any) {
			if n, ok := o.(*corev1.Node); ok {
				set(n.Annotations)
			}
		},
		UpdateFunc: func(_, o any) {
			if n, ok := o.(*corev1.Node); ok {
				set(n.Annotations)
			}
		},
		DeleteFunc: func(any) { set(nil) },
	})
	return err
}
