package daemon

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kuryrv1 "github.com/kuryr-k8s/kuryr/api/v1"
)

// NewCache watches only what this node needs: its own KuryrPorts (a label
// selector) and its own Node object (a field selector).
func NewCache(restCfg *rest.Config, node string) (cache.Cache, error) {
	scheme := runtime.NewScheme()
	if err := kuryrv1.AddToScheme(scheme); err != nil {
		return nil, err
	}
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return nil, err
	}
	c, err := cache.New(restCfg, cache.Options{Scheme: scheme, ByObject: map[client.Object]cache.ByObject{
		&kuryrv1.KuryrPort{}: {Label: labels.SelectorFromSet(labels.Set{kuryrv1.NodeNameLabel: node})},
		&corev1.Node{}:       {Field: fields.OneTermEqualSelector("metadata.name", node)},
	}})
	if err != nil {
		return nil, fmt.Errorf("node cache: %w", err)
	}
	return c, nil
}

// NewClusterCache watches what the node needs of the whole cluster:
// Services and EndpointSlices (node ports), KuryrLoadBalancers (stale
// connection-tracking entries). It is a cache of its own, not NewCache's:
// a cluster-wide list that is slow or refused (an older ClusterRole) must
// never hold back the node's CNI readiness. Objects are kept without
// their managed fields, and listed without copies (never modified).
func NewClusterCache(restCfg *rest.Config) (cache.Cache, error) {
	scheme := runtime.NewScheme()
	if err := kuryrv1.AddToScheme(scheme); err != nil {
		return nil, err
	}
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return nil, err
	}
	c, err := cache.New(restCfg, cache.Options{Scheme: scheme,
		DefaultTransform: cache.TransformStripManagedFields(), DefaultUnsafeDisableDeepCopy: ptr.To(true)})
	if err != nil {
		return nil, fmt.Errorf("cluster cache: %w", err)
	}
	return c, nil
}

// WatchKuryrPorts keeps reg equal to the cache's KuryrPorts.
func WatchKuryrPorts(ctx context.Context, c cache.Cache, reg *Registry) error {
	inf, err := c.GetInformer(ctx, &kuryrv1.KuryrPort{})
	if err != nil {
		return fmt.Errorf("KuryrPort informer: %w", err)
	}
	_, err = inf.AddEventHandler(registryHandler(reg))
	return err
}

func registryHandler(reg *Registry) toolscache.ResourceEventHandler {
	set := func(o any) {
		if kp, ok := o.(*kuryrv1.KuryrPort); ok {
			reg.Set(kp)
		}
	}
	return toolscache.ResourceEventHandlerFuncs{
		AddFunc:    set,
		UpdateFunc: func(_, o any) { set(o) },
		DeleteFunc: func(o any) {
			if t, ok := o.(toolscache.DeletedFinalStateUnknown); ok {
				o = t.Obj
			}
			if kp, ok := o.(*kuryrv1.KuryrPort); ok {
				reg.Remove(kp.Namespace, kp.Name)
			}
		},
	}
}
