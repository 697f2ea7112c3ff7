package svcports

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// NewCache watches what node ports need, cluster-wide: Services and
// EndpointSlices. It is a cache of its own, not the daemon's (its node's
// KuryrPorts and Node): a cluster-wide list that is slow or refused (an
// older ClusterRole) must never hold back the node's CNI readiness. Objects
// are kept without their managed fields, and listed without copies (the
// agent never modifies them).
func NewCache(restCfg *rest.Config) (cache.Cache, error) {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return nil, err
	}
	c, err := cache.New(restCfg, cache.Options{Scheme: scheme,
		DefaultTransform: cache.TransformStripManagedFields(), DefaultUnsafeDisableDeepCopy: ptr.To(true)})
	if err != nil {
		return nil, fmt.Errorf("services cache: %w", err)
	}
	return c, nil
}

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
