package conntrack

import (
	"context"
	"fmt"

	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	kuryrv1 "github.com/kuryr-k8s/kuryr/api/v1"
)

// Watch tells f what every KuryrLoadBalancer of the cluster serves.
func Watch(ctx context.Context, c cache.Cache, f *Flusher) error {
	inf, err := c.GetInformer(ctx, &kuryrv1.KuryrLoadBalancer{})
	if err != nil {
		return fmt.Errorf("KuryrLoadBalancer informer: %w", err)
	}
	set := func(o any) {
		if klb, ok := o.(*kuryrv1.KuryrLoadBalancer); ok {
			f.Set(klb.Namespace+"/"+klb.Name, Served(klb))
		}
	}
	_, err = inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    set,
		UpdateFunc: func(_, o any) { set(o) },
		DeleteFunc: func(o any) {
			if t, ok := o.(toolscache.DeletedFinalStateUnknown); ok {
				o = t.Obj
			}
			if klb, ok := o.(*kuryrv1.KuryrLoadBalancer); ok {
				f.Set(klb.Namespace+"/"+klb.Name, nil)
			}
		},
	})
	return err
}
