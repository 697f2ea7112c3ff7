package conntrack

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kuryrv1 "github.com/kuryr-k8s/kuryr/api/v1"
)

// Watch tells f what every KuryrLoadBalancer of the cluster serves, as
// its Service agrees (a change of either is looked at).
func Watch(ctx context.Context, c cache.Cache, f *Flusher) error {
	set := func(ns, name string) {
		key := types.NamespacedName{Namespace: ns, Name: name}
		var klb kuryrv1.KuryrLoadBalancer
		var svc corev1.Service
		if err := c.Get(ctx, key, &klb); err != nil {
			f.Set(key.String(), nil)
			return
		}
		if err := c.Get(ctx, key, &svc); err != nil {
			f.Set(key.String(), nil)
			return
		}
		f.Set(key.String(), Served(&klb, &svc))
	}
	changed := func(o any) {
		if t, ok := o.(toolscache.DeletedFinalStateUnknown); ok {
			o = t.Obj
		}
		if m, ok := o.(client.Object); ok {
			set(m.GetNamespace(), m.GetName())
		}
	}
	for _, o := range []client.Object{&kuryrv1.KuryrLoadBalancer{}, &corev1.Service{}} {
		inf, err := c.GetInformer(ctx, o)
		if err != nil {
			return fmt.Errorf("%T informer: %w", o, err)
		}
		if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
			AddFunc: changed, UpdateFunc: func(_, o any) { changed(o) }, DeleteFunc: changed,
		}); err != nil {
			return fmt.Errorf("%T handler: %w", o, err)
		}
	}
	return nil
}
