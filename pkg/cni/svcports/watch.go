package svcports

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Watch tells the agent of every change of the Services and EndpointSlices
// in c; the agent reads them from c itself.
func Watch(ctx context.Context, c cache.Cache, a *Agent) error {
	changed := toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { a.Changed() },
		UpdateFunc: func(any, any) { a.Changed() },
		DeleteFunc: func(any) { a.Changed() },
	}
	for _, o := range []client.Object{&corev1.Service{}, &discoveryv1.EndpointSlice{}} {
		inf, err := c.GetInformer(ctx, o)
		if err != nil {
			return fmt.Errorf("%T informer: %w", o, err)
		}
		if _, err := inf.AddEventHandler(changed); err != nil {
			return fmt.Errorf("%T handler: %w", o, err)
		}
	}
	return nil
}
